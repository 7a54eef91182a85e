// SPDX-License-Identifier: BSD-3-Clause
// Probe bookkeeping and the per-path up/down state machine (probe_monitor.hpp).
#include "engine/probe_monitor.hpp"

#include <algorithm>

namespace srv6gw::engine {

namespace {
// Serial-number order (RFC 1982 style): a is newer than b.
bool newer(uint32_t a, uint32_t b) {
  return int32_t(a - b) > 0;
}
}  // namespace

const char* to_string(ProbeState s) {
  return s == ProbeState::up ? "up" : "down";
}

ProbeMonitor::ProbeMonitor(const ProbeParams& p) : params_(p) {}

void ProbeMonitor::set_paths(const std::vector<ProbePathSpec>& specs) {
  std::unordered_map<uint16_t, PathState> old;
  for (PathState& p : paths_) old.emplace(p.spec.path_id, std::move(p));
  paths_.clear();
  by_id_.clear();
  for (const ProbePathSpec& s : specs) {
    PathState st;
    if (auto it = old.find(s.path_id); it != old.end()) {
      st = std::move(it->second);
    } else {
      st.in_flight.resize(kProbeOutstanding);
      st.rtt.resize(kRttWindow);
      st.outcome.resize(kLossWindow);
    }
    st.spec = s;
    by_id_[s.path_id] = paths_.size();
    paths_.push_back(std::move(st));
  }
}

bool ProbeMonitor::next_seq(uint16_t path_id, uint64_t now_ns, uint32_t& seq) {
  auto it = by_id_.find(path_id);
  if (it == by_id_.end()) return false;
  PathState& p = paths_[it->second];
  seq = p.next_seq++;
  if (p.next_seq == 0) p.next_seq = 1;  // 0 is never a sequence number
  InFlight& slot = p.in_flight[seq % kProbeOutstanding];
  // The slot's previous probe is still unanswered after kProbeOutstanding intervals: lost
  // (check() keeps the timeout shorter than that, so this only happens with a stalled tick).
  if (slot.pending) lose(p, slot.seq, now_ns, &evicted_);
  slot.seq = seq;
  slot.sent_ns = now_ns;
  slot.pending = true;
  ++p.sent;
  return true;
}

bool ProbeMonitor::on_reply(uint16_t path_id, uint32_t seq, uint64_t rtt_ns, uint64_t now_ns) {
  auto it = by_id_.find(path_id);
  if (it == by_id_.end()) {
    ++counters_.unknown_path;
    return false;
  }
  PathState& p = paths_[it->second];
  InFlight& slot = p.in_flight[seq % kProbeOutstanding];
  if (slot.seq != seq || !slot.pending || seq == 0) {
    // Not in flight: answered twice, or declared lost already (then it is late), or forged.
    if (slot.seq == seq && seq != 0 && !slot.pending && slot.sent_ns == 0) {
      ++p.late;
    } else {
      ++counters_.unknown_seq;
    }
    return false;
  }
  slot.pending = false;
  ++counters_.replies;
  ++p.answered;
  resolve(p, false);
  p.rtt[p.rtt_count % kRttWindow] = rtt_ns;
  ++p.rtt_count;
  p.rtt_last_ns = rtt_ns;
  if (!p.any_answered || newer(seq, p.newest_answered)) {
    p.any_answered = true;
    p.newest_answered = seq;
    p.consecutive_lost = 0;
  }
  if (p.healthy_since_ns == 0) p.healthy_since_ns = now_ns ? now_ns : 1;
  return true;
}

void ProbeMonitor::resolve(PathState& p, bool lost) {
  p.outcome[p.outcome_count % kLossWindow] = lost ? 1 : 0;
  ++p.outcome_count;
}

void ProbeMonitor::lose(PathState& p, uint32_t seq, uint64_t now_ns,
                        std::vector<ProbeTransition>* out) {
  InFlight& slot = p.in_flight[seq % kProbeOutstanding];
  slot.pending = false;
  slot.sent_ns = 0;  // marks "declared lost" for on_reply (late answers)
  ++p.lost;
  resolve(p, true);
  p.healthy_since_ns = 0;
  if (p.any_answered && !newer(seq, p.newest_answered)) return;  // an answer came after it
  ++p.consecutive_lost;
  if (p.state == ProbeState::up && p.consecutive_lost >= params_.loss_threshold)
    transition(p, ProbeState::down, now_ns, out);
}

void ProbeMonitor::transition(PathState& p, ProbeState to, uint64_t now_ns,
                              std::vector<ProbeTransition>* out) {
  ProbeTransition t;
  t.policy = p.spec.policy;
  t.segment_list = p.spec.segment_list;
  t.path_id = p.spec.path_id;
  t.from = p.state;
  t.to = to;
  t.consecutive_lost = p.consecutive_lost;
  t.at_ns = now_ns;
  p.state = to;
  p.last_change_ns = now_ns;
  if (to == ProbeState::down)
    ++counters_.transitions_down;
  else
    ++counters_.transitions_up;
  if (out) out->push_back(std::move(t));
}

void ProbeMonitor::tick(uint64_t now_ns, std::vector<ProbeTransition>& out) {
  for (ProbeTransition& t : evicted_) out.push_back(std::move(t));
  evicted_.clear();
  const uint64_t timeout = uint64_t(params_.timeout_us) * 1000;
  const uint64_t hold_down = uint64_t(params_.hold_down_us) * 1000;
  for (PathState& p : paths_) {
    // Oldest first: probes were sent in sequence order, so the first one still within its
    // timeout ends the walk.
    for (uint32_t s = p.oldest_pending; newer(p.next_seq, s); s = s + 1 == 0 ? 1 : s + 1) {
      InFlight& slot = p.in_flight[s % kProbeOutstanding];
      if (slot.seq == s && slot.pending) {
        if (now_ns < slot.sent_ns + timeout) break;
        lose(p, s, now_ns, &out);
      }
      p.oldest_pending = s + 1 == 0 ? 1 : s + 1;
    }
    if (p.state == ProbeState::down && p.consecutive_lost == 0 && p.healthy_since_ns != 0 &&
        now_ns >= p.healthy_since_ns + hold_down)
      transition(p, ProbeState::up, now_ns, &out);
  }
}

std::vector<ProbePathView> ProbeMonitor::paths() const {
  std::vector<ProbePathView> v;
  for (const PathState& p : paths_) {
    ProbePathView pv;
    pv.policy = p.spec.policy;
    pv.segment_list = p.spec.segment_list;
    pv.path_id = p.spec.path_id;
    pv.traffic_class = p.spec.traffic_class;
    pv.traffic_class_source = p.spec.traffic_class_source;
    pv.state = p.state;
    pv.last_change_ns = p.last_change_ns;
    pv.sent = p.sent;
    pv.answered = p.answered;
    pv.lost = p.lost;
    pv.late = p.late;
    pv.consecutive_lost = p.consecutive_lost;
    const uint32_t n_out = std::min<uint32_t>(p.outcome_count, kLossWindow);
    uint32_t n_lost = 0;
    for (uint32_t i = 0; i < n_out; ++i) n_lost += p.outcome[i];
    pv.loss_ratio = n_out ? double(n_lost) / double(n_out) : 0.0;
    const uint32_t n = std::min<uint32_t>(p.rtt_count, kRttWindow);
    pv.rtt_samples = n;
    if (n) {
      std::vector<uint64_t> s(p.rtt.begin(), p.rtt.begin() + n);
      std::sort(s.begin(), s.end());
      uint64_t sum = 0;
      for (uint64_t x : s) sum += x;
      pv.rtt_min_ns = s.front();
      pv.rtt_avg_ns = sum / n;
      // Nearest rank: the smallest sample with at least 99% of the window at or below it.
      const size_t rank = (size_t(n) * 99 + 99) / 100;
      pv.rtt_p99_ns = s[std::max<size_t>(rank, 1) - 1];
      pv.rtt_last_ns = p.rtt_last_ns;
    }
    v.push_back(std::move(pv));
  }
  return v;
}

}  // namespace srv6gw::engine
