// SPDX-License-Identifier: BSD-3-Clause
#include "engine/attribution.hpp"

#include <algorithm>

namespace srv6gw::engine {

using dataplane::FeedbackKind;

bool Attributor::feed(const dataplane::FeedbackEvent& e, Engine& engine) {
  const bool has_tag = (e.flags & dataplane::kFeedbackHasTag) != 0;
  const bool reflected = has_tag && (e.tag & dataplane::kTagReflected) != 0;
  switch (e.kind) {
    case FeedbackKind::ce_decap:
      ++counters_.ce_seen;
      return false;
    case FeedbackKind::cnp_encap:
      ++counters_.cnp_sent;
      if (reflected) ++counters_.cnp_sent_reflected;
      return false;
    case FeedbackKind::cnp_decap:
      break;
    default:
      return false;
  }
  if (reflected) {
    if (engine.report(uint16_t(e.tag & dataplane::kTagPathMask), 1.0)) {
      ++counters_.cnp_reflected;
      return true;
    }
    ++counters_.unknown_path;
    return false;
  }
  // The CNP travels from the remote host (inner src) to our host (inner dst); our data went
  // the other way.
  scratch_.clear();
  if (recent_) recent_(e.dst(), e.src(), scratch_);
  // Sum per path (one entry per worker that carried the pair), then share one unit of blame
  // in proportion to the packets each path carried in the window.
  std::sort(scratch_.begin(), scratch_.end(),
            [](const auto& a, const auto& b) { return a.path_id < b.path_id; });
  double total = 0;
  size_t n = 0;
  for (size_t i = 0; i < scratch_.size(); ++i) {
    total += scratch_[i].packets;
    if (n && scratch_[n - 1].path_id == scratch_[i].path_id)
      scratch_[n - 1].packets += scratch_[i].packets;
    else
      scratch_[n++] = scratch_[i];
  }
  scratch_.resize(n);
  if (total <= 0) {
    ++counters_.cnp_unattributed;
    return false;
  }
  bool any = false;
  for (const dataplane::RecentUse& u : scratch_)
    any |= engine.report(u.path_id, double(u.packets) / total);
  if (any)
    ++counters_.cnp_fallback;
  else
    ++counters_.cnp_unattributed;
  return any;
}

}  // namespace srv6gw::engine
