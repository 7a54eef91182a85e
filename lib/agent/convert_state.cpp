// SPDX-License-Identifier: BSD-3-Clause
// srv6gw.v1 messages of what the agent reports and of the engine parameters (convert.hpp).
#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "agent/convert.hpp"

namespace srv6gw::agent {

namespace {

v1::PathState to_proto(PathState s) {
  switch (s) {
    case PathState::up:
      return v1::PATH_STATE_UP;
    case PathState::degraded:
      return v1::PATH_STATE_DEGRADED;
    case PathState::down:
      return v1::PATH_STATE_DOWN;
    case PathState::unspecified:
      break;
  }
  return v1::PATH_STATE_UNSPECIFIED;
}

v1::EventKind to_proto(EventKind k) {
  switch (k) {
    case EventKind::subscribed:
      return v1::EVENT_KIND_SUBSCRIBED;
    case EventKind::config_applied:
      return v1::EVENT_KIND_CONFIG_APPLIED;
    case EventKind::path_weight:
      return v1::EVENT_KIND_PATH_WEIGHT;
    case EventKind::path_state:
      return v1::EVENT_KIND_PATH_STATE;
    case EventKind::events_lost:
      return v1::EVENT_KIND_EVENTS_LOST;
    case EventKind::pause_storm:
      return v1::EVENT_KIND_PAUSE_STORM;
  }
  return v1::EVENT_KIND_UNSPECIFIED;
}

}  // namespace

void worker_to_proto(unsigned index, const dataplane::WorkerCounters& w, v1::WorkerStats& o) {
  o.set_index(index);
  const auto* desc = o.GetDescriptor();
  const auto* refl = o.GetReflection();
  dataplane::for_each_counter(
      w,
      [&](const char* name, uint64_t value) {
        // A counter without a field is left out here; test agent-convert catches it.
        if (const auto* field = desc->FindFieldByName(name)) refl->SetUInt64(&o, field, value);
      },
      [](const dataplane::CounterGroup&) {});
}

namespace {

// Every drop reason of one worker: (name, count), in a fixed order; status groups without
// their ok entry (not a drop).
template <class F>
void for_each_drop(const dataplane::WorkerCounters& w, F f) {
  dataplane::for_each_counter(
      w, [](const char*, uint64_t) {},
      [&](const dataplane::CounterGroup& g) {
        for (size_t r = 0; r < g.values.size(); ++r) {
          if (g.prefix[0] && std::string_view(g.reasons[r]) == "ok") continue;
          f(std::string(g.prefix) + g.reasons[r], g.values[r]);
        }
      });
}

void probe_to_proto(const engine::ProbePathView& pv, v1::ProbeStats& ps) {
  ps.set_state(pv.state == engine::ProbeState::up ? v1::PATH_STATE_UP : v1::PATH_STATE_DOWN);
  ps.set_last_change_ns(pv.last_change_ns);
  ps.set_sent(pv.sent);
  ps.set_answered(pv.answered);
  ps.set_lost(pv.lost);
  ps.set_late(pv.late);
  ps.set_loss_ratio(pv.loss_ratio);
  ps.set_rtt_min_ns(pv.rtt_min_ns);
  ps.set_rtt_avg_ns(pv.rtt_avg_ns);
  ps.set_rtt_p99_ns(pv.rtt_p99_ns);
  ps.set_traffic_class(pv.traffic_class);
  ps.set_traffic_class_source(pv.traffic_class_source);
  ps.set_consecutive_lost(pv.consecutive_lost);
  ps.set_rail(pv.rail);
}

}  // namespace

void to_proto(const ChangeCounts& c, v1::ChangeCounts& out) {
  out.set_policies_upserted(c.policies_upserted);
  out.set_policies_deleted(c.policies_deleted);
  out.set_steering_upserted(c.steering_upserted);
  out.set_steering_deleted(c.steering_deleted);
  out.set_local_sids_upserted(c.local_sids_upserted);
  out.set_local_sids_deleted(c.local_sids_deleted);
  out.set_rails_upserted(c.rails_upserted);
}

void to_proto(const Event& e, v1::Event& out) {
  out.set_sequence(e.sequence);
  out.set_generation(e.generation);
  out.set_time_unix_ns(e.time_unix_ns);
  out.set_kind(to_proto(e.kind));
  if (auto* a = std::get_if<ConfigAppliedEvent>(&e.detail)) {
    to_proto(a->counts, *out.mutable_config_applied()->mutable_counts());
    out.mutable_config_applied()->set_origin(a->origin);
    out.mutable_config_applied()->set_engine_params(a->engine_params);
  } else if (auto* p = std::get_if<PathEvent>(&e.detail)) {
    auto* o = out.mutable_path();
    o->set_policy(p->policy);
    o->set_segment_list(p->segment_list);
    o->set_path_id(p->path_id);
    o->set_old_factor(p->old_factor);
    o->set_new_factor(p->new_factor);
    o->set_old_state(to_proto(p->old_state));
    o->set_new_state(to_proto(p->new_state));
    o->set_congestion(p->congestion);
    o->set_reason(p->reason);
  } else if (auto* lost = std::get_if<uint64_t>(&e.detail)) {
    out.set_lost(*lost);
  } else if (auto* st = std::get_if<PauseStormEvent>(&e.detail)) {
    auto* o = out.mutable_pause_storm();
    o->set_port(st->port);
    o->set_device(st->device);
    o->set_active(st->active);
    o->set_storms(st->storms);
    o->set_dropped(st->dropped);
  }
}

std::optional<EventKind> from_proto(v1::EventKind k) {
  switch (k) {
    case v1::EVENT_KIND_SUBSCRIBED:
      return EventKind::subscribed;
    case v1::EVENT_KIND_CONFIG_APPLIED:
      return EventKind::config_applied;
    case v1::EVENT_KIND_PATH_WEIGHT:
      return EventKind::path_weight;
    case v1::EVENT_KIND_PATH_STATE:
      return EventKind::path_state;
    case v1::EVENT_KIND_EVENTS_LOST:
      return EventKind::events_lost;
    case v1::EVENT_KIND_PAUSE_STORM:
      return EventKind::pause_storm;
    default:
      return std::nullopt;
  }
}

void to_proto(const engine::Params& p, v1::EngineParams& o) {
  o.set_enabled(p.enabled);
  o.set_interval_us(p.interval_us);
  o.set_alpha(p.alpha);
  o.set_decrease(p.decrease);
  o.set_min_factor(p.min_factor);
  o.set_decrease_gap_us(p.decrease_gap_us);
  o.set_exclude_threshold(p.exclude_threshold);
  o.set_readmit_threshold(p.readmit_threshold);
  o.set_readmit_factor(p.readmit_factor);
  o.set_hold_down_us(p.hold_down_us);
  o.set_max_hold_down_us(p.max_hold_down_us);
  o.set_recovery_step(p.recovery_step);
  o.set_recovery_period_us(p.recovery_period_us);
  o.set_reflect(p.reflect);
  o.set_path_id_in_source(p.path_id_in_source);
  o.set_source_entropy_bits(p.source_entropy_bits);
}

std::string merge_engine_params(const v1::EngineParams& in, engine::Params& p) {
  std::string bad;
  auto dec = [&](bool has, double v, const char* name, double& to) {
    if (!has || !bad.empty()) return;
    if (!std::isfinite(v) || std::fabs(v) > 1e12) {
      bad = std::string("params.") + name + ": " + std::to_string(v) +
            " is not a usable number (/srv6gw:gateway/engine/" + name + ")";
      for (size_t i = bad.find('(') + 1; i < bad.size(); ++i)
        if (bad[i] == '_') bad[i] = '-';
      return;
    }
    to = std::round(v * 1e6) / 1e6;
  };
  if (in.has_enabled()) p.enabled = in.enabled();
  if (in.has_interval_us()) p.interval_us = in.interval_us();
  dec(in.has_alpha(), in.alpha(), "alpha", p.alpha);
  dec(in.has_decrease(), in.decrease(), "decrease", p.decrease);
  dec(in.has_min_factor(), in.min_factor(), "min_factor", p.min_factor);
  if (in.has_decrease_gap_us()) p.decrease_gap_us = in.decrease_gap_us();
  dec(in.has_exclude_threshold(), in.exclude_threshold(), "exclude_threshold", p.exclude_threshold);
  dec(in.has_readmit_threshold(), in.readmit_threshold(), "readmit_threshold", p.readmit_threshold);
  dec(in.has_readmit_factor(), in.readmit_factor(), "readmit_factor", p.readmit_factor);
  if (in.has_hold_down_us()) p.hold_down_us = in.hold_down_us();
  if (in.has_max_hold_down_us()) p.max_hold_down_us = in.max_hold_down_us();
  dec(in.has_recovery_step(), in.recovery_step(), "recovery_step", p.recovery_step);
  if (in.has_recovery_period_us()) p.recovery_period_us = in.recovery_period_us();
  if (in.has_reflect()) p.reflect = in.reflect();
  if (in.has_path_id_in_source()) p.path_id_in_source = in.path_id_in_source();
  // Saturated, not truncated: engine::check() then refuses it by name.
  if (in.has_source_entropy_bits())
    p.source_entropy_bits = uint8_t(std::min<uint32_t>(in.source_entropy_bits(), 255));
  return bad;
}

void to_proto(const StatsSnapshot& st, uint64_t generation, v1::Stats& resp) {
  resp.set_generation(generation);
  for (const PortCounters& p : st.ports) {
    auto* o = resp.add_ports();
    o->set_role(p.role);
    o->set_name(p.name);
    o->set_rx_packets(p.rx_packets);
    o->set_rx_bytes(p.rx_bytes);
    o->set_tx_packets(p.tx_packets);
    o->set_tx_bytes(p.tx_bytes);
    o->set_rx_missed(p.rx_missed);
    o->set_rx_errors(p.rx_errors);
    o->set_tx_errors(p.tx_errors);
    o->set_rx_nombuf(p.rx_nombuf);
    o->set_rail(p.rail);
  }
  std::vector<std::pair<std::string, uint64_t>> totals;
  for (size_t i = 0; i < st.workers.size(); ++i) {
    const auto& w = st.workers[i];
    auto* o = resp.add_workers();
    worker_to_proto(unsigned(i), w, *o);
    o->set_rail(i < st.worker_rails.size() ? st.worker_rails[i] : config::kImplicitRailName);
    size_t k = 0;
    for_each_drop(w, [&](std::string name, uint64_t value) {
      if (k == totals.size()) totals.emplace_back(name, 0);
      totals[k++].second += value;
      if (value == 0) return;
      auto* d = o->add_drops();
      d->set_name(std::move(name));
      d->set_value(value);
    });
  }
  if (totals.empty()) {
    for_each_drop(dataplane::WorkerCounters{},
                  [&](std::string name, uint64_t) { totals.emplace_back(std::move(name), 0); });
  }
  for (auto& [name, value] : totals) {
    auto* d = resp.add_drops();
    d->set_name(name);
    d->set_value(value);
  }
  // Paths arrive grouped by policy (the Gateway walks policies in turn).
  v1::PolicyStats* policy = nullptr;
  for (const auto& p : st.paths) {
    if (!policy || policy->name() != p.policy) {
      policy = resp.add_policies();
      policy->set_name(p.policy);
    }
    auto* o = policy->add_paths();
    o->set_segment_list(p.segment_list);
    o->set_path_id(p.path_id);
    o->set_weight(p.weight_configured);
    o->set_factor(p.factor);
    o->set_packets(p.packets);
    o->set_bytes(p.bytes);
    o->set_active_flows(p.active_flows);
    o->set_load_group(p.load_group);
    for (const engine::ProbePathView& pv : st.probes) {
      if (pv.path_id != p.path_id) continue;
      if (!o->has_probe()) probe_to_proto(pv, *o->mutable_probe());
      if (!pv.rail.empty()) probe_to_proto(pv, *o->add_rail_probes());
    }
    policy->set_packets(policy->packets() + p.packets);
    policy->set_bytes(policy->bytes() + p.bytes);
  }
}

}  // namespace srv6gw::agent
