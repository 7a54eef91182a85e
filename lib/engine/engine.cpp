// SPDX-License-Identifier: BSD-3-Clause
// The local SR engine's algorithm (see engine.hpp for the rules and docs/design/engine.md for why).
#include "engine/engine.hpp"

#include <algorithm>
#include <cmath>

namespace srv6gw::engine {

const char* to_string(Reason r) {
  return net::enum_name(kReasonNames, r);
}

Engine::Engine(const Params& p) : params_(p) {}

void Engine::set_policies(const std::vector<PolicySpec>& policies) {
  std::unordered_map<uint16_t, PathState> old;
  for (PolicyState& pol : policies_)
    for (PathState& path : pol.paths) old.emplace(path.path_id, std::move(path));
  policies_.clear();
  by_id_.clear();
  for (const PolicySpec& spec : policies) {
    PolicyState pol;
    pol.name = spec.name;
    for (const PathSpec& ps : spec.paths) {
      PathState st;
      if (auto it = old.find(ps.path_id); it != old.end()) st = std::move(it->second);
      st.path_id = ps.path_id;
      st.name = ps.name;
      st.weight = ps.weight;
      st.backup = ps.backup;
      by_id_[ps.path_id] = Where{uint32_t(policies_.size()), uint32_t(pol.paths.size())};
      pol.paths.push_back(std::move(st));
    }
    policies_.push_back(std::move(pol));
  }
}

bool Engine::report(uint16_t path_id, double amount) {
  auto it = by_id_.find(path_id);
  if (it == by_id_.end()) {
    ++counters_.unknown_path;
    return false;
  }
  if (!fabric_usable_) {
    ++counters_.evidence_fabric_unusable;
    return true;
  }
  ++counters_.reports;
  PathState& p = policies_[it->second.policy].paths[it->second.path];
  p.evidence += amount;
  p.evidence_total += amount;
  return true;
}

void Engine::tick(uint64_t now_ns, std::vector<Decision>& out) {
  const uint64_t interval = uint64_t(params_.interval_us) * 1000;
  if (!started_) {
    started_ = true;
    interval_start_ns_ = now_ns;
    return;
  }
  if (now_ns < interval_start_ns_ + interval) return;
  const uint64_t elapsed = (now_ns - interval_start_ns_) / interval;  // >= 1
  interval_start_ns_ += elapsed * interval;
  if (!fabric_usable_) return;  // nothing learnt meanwhile blames a path
  close_interval(now_ns, elapsed - 1, out);
}

void Engine::set_fabric_usable(bool usable, uint64_t now_ns, std::vector<Decision>& out) {
  if (usable == fabric_usable_) return;
  fabric_usable_ = usable;
  if (!usable) {
    ++counters_.fabric_unusable_periods;
    return;
  }
  std::vector<std::pair<uint16_t, bool>> held;
  held.swap(held_probes_);
  for (const auto& [id, up] : held) set_probe(id, up, now_ns, out);
}

void Engine::change(PolicyState& pol, PathState& path, double factor, Reason r, uint64_t now,
                    std::vector<Decision>& out) {
  Decision d;
  d.policy = pol.name;
  d.segment_list = path.name;
  d.path_id = path.path_id;
  d.old_factor = path.factor;
  d.new_factor = factor;
  d.reason = r;
  d.score = path.score;
  d.at_ns = now;
  path.factor = factor;
  ++counters_.decisions[size_t(r)];
  out.push_back(std::move(d));
}

void Engine::close_interval(uint64_t now, uint64_t quiet_intervals, std::vector<Decision>& out) {
  const Params& P = params_;
  ++counters_.ticks;
  const double keep = 1.0 - P.alpha;
  const double decay = quiet_intervals ? std::pow(keep, double(quiet_intervals)) : 1.0;
  const uint64_t base_hold_down = uint64_t(P.hold_down_us) * 1000;
  const uint64_t max_hold_down = uint64_t(P.max_hold_down_us) * 1000;
  const uint64_t decrease_gap = uint64_t(P.decrease_gap_us) * 1000;
  const uint64_t recovery_period = uint64_t(P.recovery_period_us) * 1000;

  for (PolicyState& pol : policies_) {
    // Scores first: the exclusion rule compares a path with its siblings' current scores.
    for (PathState& p : pol.paths) {
      p.score = (keep * p.score + P.alpha * p.evidence) * decay;
      if (p.score < 1e-9) p.score = 0.0;
    }
    for (PathState& p : pol.paths) {
      const double evidence = p.evidence;
      p.evidence = 0.0;
      if (p.admin_down) continue;  // the controller owns this path until it says up
      if (p.probe_down) continue;  // broken: probes bring it back, not the algorithm
      const uint64_t hold_down = std::max(p.hold_down_ns, base_hold_down);
      if (evidence > 0.0) {
        // Congested again soon after we raised it: back off before raising it again.
        if (p.last_increase_ns != 0 && now - p.last_increase_ns < hold_down)
          p.hold_down_ns = std::min(2 * hold_down, max_hold_down);
        p.last_congestion_ns = now;
        p.ever_congested = true;
        if (p.excluded) continue;
        if (p.score >= P.exclude_threshold) {
          // Take it out only when a sibling can carry the traffic and is not itself past
          // the threshold: moving traffic from one saturated path to another helps nobody,
          // and congestion must never leave a policy without a usable list.
          bool healthy_alternative = false;
          for (const PathState& o : pol.paths)
            if (&o != &p && usable(o) && o.score < P.exclude_threshold) healthy_alternative = true;
          if (healthy_alternative) {
            change(pol, p, 0.0, Reason::excluded, now, out);
            p.excluded = true;
            p.excluded_since_ns = now;
            p.last_decrease_ns = now;
            continue;
          }
          if (p.factor > P.min_factor) {
            change(pol, p, P.min_factor, Reason::last_path_kept, now, out);
            p.last_decrease_ns = now;
          }
          continue;
        }
        // One CNP's worth of evidence (or more) since the last decrease is one full
        // multiplicative decrease; a fallback blame's share of a CNP is that share of it
        // (decrease^share): a list a CNP only partly points at loses only part of a step.
        p.pending_evidence += evidence;
        if (p.last_decrease_ns == 0 || now - p.last_decrease_ns >= decrease_gap) {
          const double step = std::pow(P.decrease, std::min(1.0, p.pending_evidence));
          const double f = std::max(p.factor * step, P.min_factor);
          p.pending_evidence = 0.0;
          if (f < p.factor) {
            change(pol, p, f, Reason::congestion, now, out);
            p.last_decrease_ns = now;
          }
        }
        continue;
      }
      const bool quiet = !p.ever_congested || now - p.last_congestion_ns >= hold_down;
      if (!quiet) continue;
      if (p.excluded) {
        if (p.score <= P.readmit_threshold && now - p.excluded_since_ns >= hold_down) {
          change(pol, p, P.readmit_factor, Reason::readmitted, now, out);
          p.excluded = false;
          p.last_increase_ns = now;
        }
        continue;
      }
      if (p.factor < 1.0 &&
          (p.last_increase_ns == 0 || now - p.last_increase_ns >= recovery_period)) {
        change(pol, p, std::min(1.0, p.factor + P.recovery_step), Reason::recovery, now, out);
        p.last_increase_ns = now;
        if (p.factor >= 1.0) p.hold_down_ns = 0;  // fully recovered: forgive
      }
    }
  }
}

bool Engine::set_admin(uint16_t path_id, bool up, uint64_t now_ns, std::vector<Decision>& out) {
  auto it = by_id_.find(path_id);
  if (it == by_id_.end()) return false;
  PolicyState& pol = policies_[it->second.policy];
  PathState& p = pol.paths[it->second.path];
  if (!up) {
    if (p.admin_down) return true;
    p.admin_down = true;
    p.excluded = false;
    change(pol, p, 0.0, Reason::explicit_down, now_ns, out);
    // The controller may empty a policy, congestion may not: when this was the last usable
    // list and siblings are out only because the engine excluded them, the first comes back
    // at the minimum factor in the same publication (found by tools/soak.py: path down while
    // the other list was excluded dropped packets as no_usable_path until readmission).
    bool usable_left = false;
    for (const PathState& o : pol.paths) usable_left |= usable(o);
    if (!usable_left) {
      for (PathState& o : pol.paths) {
        if (o.excluded && !o.admin_down && o.weight > 0) {
          change(pol, o, params_.min_factor, Reason::last_path_kept, now_ns, out);
          o.excluded = false;
          o.last_decrease_ns = now_ns;
          break;
        }
      }
    }
    return true;
  }
  if (p.probe_down) {  // the controller's up does not override broken probes
    p.admin_down = false;
    return true;
  }
  const bool was = p.admin_down || p.excluded || p.factor != 1.0;
  p.admin_down = false;
  p.excluded = false;
  p.score = 0.0;
  p.evidence = 0.0;
  p.pending_evidence = 0.0;
  p.ever_congested = false;
  p.last_decrease_ns = 0;
  p.last_increase_ns = 0;
  p.hold_down_ns = 0;
  if (was) change(pol, p, 1.0, Reason::explicit_up, now_ns, out);
  return true;
}

bool Engine::set_probe(uint16_t path_id, bool up, uint64_t now_ns, std::vector<Decision>& out) {
  auto it = by_id_.find(path_id);
  if (it == by_id_.end()) return false;
  if (!fabric_usable_) {
    ++counters_.probe_held_fabric_unusable;
    for (auto& h : held_probes_)
      if (h.first == path_id) {
        h.second = up;
        return true;
      }
    held_probes_.emplace_back(path_id, up);
    return true;
  }
  PolicyState& pol = policies_[it->second.policy];
  PathState& p = pol.paths[it->second.path];
  if (!up) {
    if (p.probe_down) return true;
    p.probe_down = true;
    const bool was_excluded = p.excluded;
    p.excluded = false;
    // The policy's last usable list (no other primary, no backup) stays in service: sending
    // into a path that may be dead loses nothing more than dropping here, and a false alarm
    // (probes delayed, not lost) then costs nothing. It goes out once another list is back.
    bool other_usable = false;
    for (const PathState& o : pol.paths)
      if (&o != &p && usable(o)) other_usable = true;
    if (!other_usable) {
      ++counters_.probe_last_path_kept;
      return true;
    }
    // A list already excluded for congestion (factor 0) changes too: from de-weighted to
    // down, which the published policy carries (Engine::down_mask).
    if (p.factor != 0.0 || was_excluded) change(pol, p, 0.0, Reason::probe_down, now_ns, out);
    return true;
  }
  if (!p.probe_down) return true;
  p.probe_down = false;
  // Lists kept in service only because they were the last ones leave now.
  for (PathState& o : pol.paths)
    if (&o != &p && o.probe_down && o.factor != 0.0 && (!p.admin_down && p.weight > 0))
      change(pol, o, 0.0, Reason::probe_down, now_ns, out);
  if (p.admin_down) return true;  // the controller still holds it down
  p.excluded = false;
  p.score = 0.0;
  p.evidence = 0.0;
  p.ever_congested = false;
  p.last_decrease_ns = 0;
  p.last_increase_ns = 0;
  p.hold_down_ns = 0;
  if (p.factor != 1.0) change(pol, p, 1.0, Reason::probe_up, now_ns, out);
  return true;
}

std::vector<double> Engine::factors(const std::string& policy) const {
  std::vector<double> f;
  for (const PolicyState& pol : policies_) {
    if (pol.name != policy) continue;
    for (const PathState& p : pol.paths) f.push_back(p.factor);
  }
  return f;
}

uint64_t Engine::down_mask(const std::string& policy) const {
  uint64_t mask = 0;
  for (const PolicyState& pol : policies_) {
    if (pol.name != policy) continue;
    for (size_t i = 0; i < pol.paths.size() && i < 64; ++i) {
      const PathState& p = pol.paths[i];
      if ((p.admin_down || p.probe_down) && p.factor == 0.0) mask |= uint64_t(1) << i;
    }
  }
  return mask;
}

std::vector<PathView> Engine::paths() const {
  std::vector<PathView> v;
  for (const PolicyState& pol : policies_)
    for (const PathState& p : pol.paths)
      v.push_back(PathView{pol.name, p.name, p.path_id, p.factor, p.score, p.excluded, p.admin_down,
                           p.probe_down, uint64_t(std::llround(p.evidence_total))});
  return v;
}

}  // namespace srv6gw::engine
