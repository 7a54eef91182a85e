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
  std::sort(scratch_.begin(), scratch_.end());
  scratch_.erase(std::unique(scratch_.begin(), scratch_.end()), scratch_.end());
  if (scratch_.empty()) {
    ++counters_.cnp_unattributed;
    return false;
  }
  const double share = 1.0 / double(scratch_.size());
  bool any = false;
  for (uint16_t id : scratch_) any |= engine.report(id, share);
  if (any)
    ++counters_.cnp_fallback;
  else
    ++counters_.cnp_unattributed;
  return any;
}

}  // namespace srv6gw::engine
