// SPDX-License-Identifier: BSD-3-Clause
#include "engine_runner.hpp"

#include <rte_cycles.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <set>

#include "policy/runtime.hpp"

namespace srv6gw::app {

namespace {

constexpr unsigned kDrainBatch = 256;

uint64_t steady_ns() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

agent::PathState state_of(double factor) {
  if (factor <= 0.0) return agent::PathState::down;
  if (factor < 1.0) return agent::PathState::degraded;
  return agent::PathState::up;
}

// A path leaving or re-entering service is a state change; the rest only moves its weight.
agent::EventKind kind_of(const engine::Decision& d) {
  switch (d.reason) {
    case engine::Reason::excluded:
    case engine::Reason::readmitted:
    case engine::Reason::explicit_down:
    case engine::Reason::explicit_up:
    case engine::Reason::probe_down:
    case engine::Reason::probe_up:
      return agent::EventKind::path_state;
    case engine::Reason::congestion:
    case engine::Reason::last_path_kept:
    case engine::Reason::recovery:
    case engine::Reason::count_:
      break;
  }
  return (d.old_factor <= 0.0) != (d.new_factor <= 0.0) ? agent::EventKind::path_state
                                                        : agent::EventKind::path_weight;
}

}  // namespace

EngineRunner::EngineRunner(dataplane::Gateway& gw, const engine::Params& params)
    : gw_(gw),
      engine_(params),
      attributor_(
          [&gw](const net::IpAddr& local, const net::IpAddr& remote,
                std::vector<dataplane::RecentUse>& uses) { gw.recent_paths(local, remote, uses); }),
      events_(kDrainBatch) {
  sync_policies();
}

void EngineRunner::sync_policies() {
  synced_generation_ = gw_.runtime().view()->generation;
  if (const engine::Params& p = gw_.running_config().engine; !(p == engine_.params())) {
    spdlog::info(
        "engine: parameters now enabled={} interval-us={} alpha={} decrease={} min-factor={} "
        "decrease-gap-us={} exclude-threshold={} readmit-threshold={} readmit-factor={} "
        "hold-down-us={} max-hold-down-us={} recovery-step={} recovery-period-us={} reflect={} "
        "path-id-in-source={}",
        p.enabled, p.interval_us, p.alpha, p.decrease, p.min_factor, p.decrease_gap_us,
        p.exclude_threshold, p.readmit_threshold, p.readmit_factor, p.hold_down_us,
        p.max_hold_down_us, p.recovery_step, p.recovery_period_us, p.reflect, p.path_id_in_source);
    engine_.set_params(p);
  }
  std::vector<engine::PolicySpec> specs;
  for (const config::Policy& p : gw_.running_config().policies) {
    engine::PolicySpec s{p.name, {}};
    for (const config::SegmentList& sl : p.segment_lists)
      s.paths.push_back({sl.name, sl.path_id, sl.weight, sl.backup});
    specs.push_back(std::move(s));
  }
  engine_.set_policies(specs);
  // The data plane carries factors over by segment-list name, the engine by path id: where
  // they disagree (a list renamed, a path id moved), the engine's state is published.
  for (const policy::Runtime::PolicyInfo& pi : gw_.runtime().policies()) {
    const std::vector<double> want = engine_.factors(pi.policy->name);
    const uint64_t want_down = engine_.down_mask(pi.policy->name);
    bool differs = want.size() != pi.policy->paths.size() || want_down != pi.policy->down_mask;
    for (size_t i = 0; !differs && i < want.size(); ++i)
      differs = policy::factor_to_q16(want[i]) != pi.policy->paths[i].factor_q16;
    if (!differs) continue;
    if (auto e = gw_.set_path_factors(pi.policy->name, want, want_down)) {
      ++stats_.publish_errors;
      spdlog::error("engine: cannot publish {}: {}", pi.policy->name, e->message);
    }
  }
}

void EngineRunner::publish(const std::vector<engine::Decision>& decisions, size_t from) {
  std::set<std::string> touched;
  for (size_t i = from; i < decisions.size(); ++i) {
    const engine::Decision& d = decisions[i];
    touched.insert(d.policy);
    spdlog::info(
        "engine: policy {} segment-list {} (path {}): factor {:.4f} -> {:.4f} ({}, score {:.3f})",
        d.policy, d.segment_list, d.path_id, d.old_factor, d.new_factor,
        engine::to_string(d.reason), d.score);
    if (events_bus_) {
      agent::Event e;
      e.kind = kind_of(d);
      agent::PathEvent p;
      p.policy = d.policy;
      p.segment_list = d.segment_list;
      p.path_id = d.path_id;
      p.old_factor = d.old_factor;
      p.new_factor = d.new_factor;
      p.old_state = state_of(d.old_factor);
      p.new_state = state_of(d.new_factor);
      p.congestion = d.score;
      p.reason = engine::to_string(d.reason);
      e.detail = std::move(p);
      events_bus_->publish(std::move(e));
      ++stats_.events_published;
    }
  }
  for (const std::string& policy : touched) {
    if (auto e = gw_.set_path_factors(policy, engine_.factors(policy), engine_.down_mask(policy))) {
      ++stats_.publish_errors;
      spdlog::error("engine: cannot publish {}: {}", policy, e->message);
    } else {
      ++stats_.publishes;
    }
  }
}

void EngineRunner::poll(uint64_t now_ns) {
  const uint64_t t0 = steady_ns();
  const uint64_t tsc0 = rte_rdtsc();
  ++stats_.polls;
  if (gw_.runtime().view()->generation != synced_generation_) sync_policies();
  uint64_t first_cnp_tsc = 0;
  for (;;) {
    const unsigned n = gw_.drain_feedback(events_.data(), kDrainBatch);
    stats_.events += n;
    for (unsigned i = 0; i < n; ++i) {
      const dataplane::FeedbackEvent& e = events_[i];
      if (attributor_.feed(e, engine_) && (first_cnp_tsc == 0 || e.tsc < first_cnp_tsc))
        first_cnp_tsc = e.tsc;
    }
    if (n < kDrainBatch) break;
  }
  if (!engine_.params().enabled) {  // drained and counted, nothing decided
    stats_.busy_ns += steady_ns() - t0;
    return;
  }
  const size_t before = decisions_.size();
  engine_.tick(now_ns, decisions_);
  if (decisions_.size() > before) {
    publish(decisions_, before);
    const uint64_t tsc1 = rte_rdtsc();
    const double ns_per_tsc = 1e9 / double(rte_get_tsc_hz());
    stats_.last_engine_ns = uint64_t(double(tsc1 - tsc0) * ns_per_tsc);
    stats_.max_engine_ns = std::max(stats_.max_engine_ns, stats_.last_engine_ns);
    if (first_cnp_tsc != 0 && tsc1 > first_cnp_tsc) {
      ++stats_.reactions;
      stats_.last_reaction_ns = uint64_t(double(tsc1 - first_cnp_tsc) * ns_per_tsc);
      stats_.max_reaction_ns = std::max(stats_.max_reaction_ns, stats_.last_reaction_ns);
      spdlog::info(
          "engine: reaction {:.1f} us from the first CNP to the new weights in force "
          "({:.1f} us of engine time)",
          double(stats_.last_reaction_ns) / 1e3, double(stats_.last_engine_ns) / 1e3);
    }
  }
  decisions_.clear();
  stats_.busy_ns += steady_ns() - t0;
}

bool EngineRunner::set_admin(uint16_t path_id, bool up, uint64_t now_ns, bool* changed) {
  const size_t before = decisions_.size();
  if (!engine_.set_admin(path_id, up, now_ns, decisions_)) return false;
  if (changed) *changed = decisions_.size() > before;
  publish(decisions_, before);
  decisions_.resize(before);
  return true;
}

bool EngineRunner::set_probe_state(uint16_t path_id, bool up, uint64_t now_ns) {
  const size_t before = decisions_.size();
  if (!engine_.set_probe(path_id, up, now_ns, decisions_)) return false;
  publish(decisions_, before);
  decisions_.resize(before);
  return true;
}

void EngineRunner::set_fabric_usable(bool usable, uint64_t now_ns) {
  const size_t before = decisions_.size();
  engine_.set_fabric_usable(usable, now_ns, decisions_);
  publish(decisions_, before);
  decisions_.resize(before);
}

std::string EngineRunner::report() const {
  const engine::EngineCounters& c = engine_.counters();
  const engine::AttributionCounters& a = attributor_.counters();
  std::string s = fmt::format(
      "engine: {} events drained, CE seen {}, CNPs sent {} ({} reflected), CNPs received: "
      "{} reflected, {} fallback, {} unattributed, {} unknown path\n",
      stats_.events, a.ce_seen, a.cnp_sent, a.cnp_sent_reflected, a.cnp_reflected, a.cnp_fallback,
      a.cnp_unattributed, a.unknown_path);
  s += "engine: decisions";
  for (size_t r = 0; r < engine::kReasonNames.size(); ++r)
    s += fmt::format(" {}={}", engine::kReasonNames[r], c.decisions[r]);
  s += fmt::format(", {} publications ({} failed)\n", stats_.publishes, stats_.publish_errors);
  if (stats_.reactions)
    s += fmt::format(
        "engine: reaction (CNP seen -> weights in force) last {:.1f} us, max {:.1f} us; "
        "engine time last {:.1f} us, max {:.1f} us\n",
        double(stats_.last_reaction_ns) / 1e3, double(stats_.max_reaction_ns) / 1e3,
        double(stats_.last_engine_ns) / 1e3, double(stats_.max_engine_ns) / 1e3);
  for (const engine::PathView& v : engine_.paths())
    if (v.factor != 1.0 || v.evidence_total != 0 || v.admin_down || v.probe_down)
      s += fmt::format("engine:   {}/{} (path {}): factor {:.4f} score {:.3f}{}{}{}\n", v.policy,
                       v.segment_list, v.path_id, v.factor, v.score, v.excluded ? " excluded" : "",
                       v.admin_down ? " admin-down" : "", v.probe_down ? " probe-down" : "");
  return s;
}

std::string EngineRunner::json() const {
  using nlohmann::json;
  const engine::EngineCounters& c = engine_.counters();
  const engine::AttributionCounters& a = attributor_.counters();
  json j = {{"polls", stats_.polls},
            {"events", stats_.events},
            {"ce_seen", a.ce_seen},
            {"cnp_sent", a.cnp_sent},
            {"cnp_sent_reflected", a.cnp_sent_reflected},
            {"cnp_reflected", a.cnp_reflected},
            {"cnp_fallback", a.cnp_fallback},
            {"cnp_unattributed", a.cnp_unattributed},
            {"unknown_path", a.unknown_path},
            {"publications", stats_.publishes},
            {"publish_errors", stats_.publish_errors},
            {"reactions", stats_.reactions},
            {"last_reaction_ns", stats_.last_reaction_ns},
            {"max_reaction_ns", stats_.max_reaction_ns},
            {"last_engine_ns", stats_.last_engine_ns},
            {"max_engine_ns", stats_.max_engine_ns},
            {"busy_ns", stats_.busy_ns},
            {"events_published", stats_.events_published},
            {"probe_last_path_kept", c.probe_last_path_kept},
            {"evidence_fabric_unusable", c.evidence_fabric_unusable},
            {"probe_held_fabric_unusable", c.probe_held_fabric_unusable},
            {"fabric_unusable_periods", c.fabric_unusable_periods}};
  json& decisions = j["decisions"] = json::object();
  for (size_t r = 0; r < engine::kReasonNames.size(); ++r)
    decisions[engine::kReasonNames[r]] = c.decisions[r];
  json& paths = j["paths"] = json::array();
  for (const engine::PathView& v : engine_.paths())
    paths.push_back({{"policy", v.policy},
                     {"segment_list", v.segment_list},
                     {"path_id", v.path_id},
                     {"factor", v.factor},
                     {"score", v.score},
                     {"excluded", v.excluded},
                     {"admin_down", v.admin_down},
                     {"probe_down", v.probe_down},
                     {"evidence", v.evidence_total}});
  return j.dump();
}

}  // namespace srv6gw::app
