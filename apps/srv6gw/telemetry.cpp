// SPDX-License-Identifier: BSD-3-Clause
#include "telemetry.hpp"

#include <fmt/format.h>
#include <rte_telemetry.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>

#include "app.hpp"
#include "policy/runtime.hpp"
#include "stats.hpp"

namespace srv6gw::app {

namespace {

using dataplane::WorkerCounters;

// Written once by register_telemetry() before EAL's telemetry thread can call us (commands
// registered after it); read by that thread.
std::atomic<App*> g_app{nullptr};

// Telemetry names are limited to RTE_TEL_MAX_STRING_LEN and must be plain; the strings we
// use are our own enum names and user-given policy names (values, which may be longer).
std::string clip(const std::string& s) {
  return s.size() < RTE_TEL_MAX_STRING_LEN ? s : s.substr(0, RTE_TEL_MAX_STRING_LEN - 1);
}

// Every plain counter of the list (dataplane/counters.hpp) and the derived figures.
void add_counters(rte_tel_data* d, const WorkerCounters& c) {
  dataplane::for_each_counter(
      c, [d](const char* name, uint64_t value) { rte_tel_data_add_dict_u64(d, name, value); },
      [](const dataplane::CounterGroup&) {});
  const uint64_t rx = c.rx_host + c.rx_fabric;
  // Telemetry in DPDK 22.11 has no floating-point values: hundredths of a cycle.
  rte_tel_data_add_dict_u64(d, "cycles_per_packet_x100", rx ? c.busy_tsc * 100 / rx : 0);
  rte_tel_data_add_dict_u64(d, "drops_total", total_drops(c));
}

// Counts by reason, one dict per group (drops, parse_status, ...).
void add_groups(rte_tel_data* d, const WorkerCounters& c) {
  dataplane::for_each_counter(
      c, [](const char*, uint64_t) {},
      [d](const dataplane::CounterGroup& g) {
        rte_tel_data* by_reason = rte_tel_data_alloc();
        if (!by_reason) return;
        rte_tel_data_start_dict(by_reason);
        for (size_t i = 0; i < g.values.size(); ++i)
          rte_tel_data_add_dict_u64(by_reason, g.reasons[i], g.values[i]);
        rte_tel_data_add_dict_container(d, g.name, by_reason, 0);
      });
}

rte_tel_data* port_container(const PortSnapshot& p) {
  rte_tel_data* d = rte_tel_data_alloc();
  if (!d) return nullptr;
  rte_tel_data_start_dict(d);
  rte_tel_data_add_dict_string(d, "name", clip(p.name).c_str());
  rte_tel_data_add_dict_u64(d, "id", p.id);
  rte_tel_data_add_dict_string(d, "mac", net::to_string(p.mac).c_str());
  rte_tel_data_add_dict_u64(d, "ipackets", p.eth.ipackets);
  rte_tel_data_add_dict_u64(d, "opackets", p.eth.opackets);
  rte_tel_data_add_dict_u64(d, "ibytes", p.eth.ibytes);
  rte_tel_data_add_dict_u64(d, "obytes", p.eth.obytes);
  rte_tel_data_add_dict_u64(d, "imissed", p.eth.imissed);
  rte_tel_data_add_dict_u64(d, "ierrors", p.eth.ierrors);
  rte_tel_data_add_dict_u64(d, "oerrors", p.eth.oerrors);
  rte_tel_data_add_dict_u64(d, "rx_nombuf", p.eth.rx_nombuf);
  return d;
}

void add_container(rte_tel_data* d, const char* name, rte_tel_data* c) {
  if (c) rte_tel_data_add_dict_container(d, name, c, 0);
}

// Runs `fill` with the app locked, or answers an error when the gateway is not running.
template <typename Fill>
int answer(Fill fill) {
  App* app = g_app.load(std::memory_order_acquire);
  if (!app) return -EAGAIN;
  std::lock_guard lock(app->control_mutex);
  if (!app->running) return -EAGAIN;
  return fill(*app);
}

int cmd_stats(const char*, const char*, rte_tel_data* d) {
  return answer([d](App& app) {
    Snapshot s = take_snapshot(app);
    rte_tel_data_start_dict(d);
    add_counters(d, s.total);
    rte_tel_data_add_dict_u64(d, "workers", s.workers.size());
    rte_tel_data_add_dict_u64(d, "uptime_ms", (s.tsc - app.start_tsc) * 1000 / rte_get_tsc_hz());
    // mbufs out of all pools, now and when the workers started (leak check once idle).
    uint64_t in_use = 0, at_start = 0;
    for (const auto& p : s.pools) in_use += p.in_use;
    for (const auto& p : app.pools_at_start) at_start += p.in_use;
    rte_tel_data_add_dict_u64(d, "mbufs_in_use", in_use);
    rte_tel_data_add_dict_u64(d, "mbufs_in_use_at_start", at_start);
    add_groups(d, s.total);
    add_container(d, "host_port", port_container(s.host));
    add_container(d, "fabric_port", port_container(s.fabric));
    return 0;
  });
}

int cmd_workers(const char*, const char*, rte_tel_data* d) {
  return answer([d](App& app) {
    Snapshot s = take_snapshot(app);
    rte_tel_data_start_dict(d);
    for (size_t i = 0; i < s.workers.size() && i < RTE_TEL_MAX_DICT_ENTRIES; ++i) {
      rte_tel_data* w = rte_tel_data_alloc();
      if (!w) return -ENOMEM;
      rte_tel_data_start_dict(w);
      rte_tel_data_add_dict_u64(w, "lcore",
                                i < app.worker_lcores.size() ? app.worker_lcores[i] : 0);
      rte_tel_data_add_dict_u64(w, "queue", i);
      add_counters(w, s.workers[i]);
      const WorkerCounters& c = s.workers[i];
      for (size_t r = 0; r < c.drops.size(); ++r)
        if (c.drops[r])
          rte_tel_data_add_dict_u64(
              w, fmt::format("drop_{}", dataplane::kDropReasonNames[r]).c_str(), c.drops[r]);
      rte_tel_data_add_dict_container(d, std::to_string(i).c_str(), w, 0);
    }
    return 0;
  });
}

int cmd_paths(const char*, const char* params, rte_tel_data* d) {
  const std::string only = params ? params : "";
  return answer([d, &only](App& app) {
    auto paths = app.gateway->path_stats();
    // Keyed by path id (unique in the gateway): DPDK 22.11 arrays cannot hold dicts.
    rte_tel_data_start_dict(d);
    unsigned n = 0;
    for (const auto& p : paths) {
      if (!only.empty() && p.policy != only) continue;
      if (n++ == RTE_TEL_MAX_DICT_ENTRIES) break;
      rte_tel_data* e = rte_tel_data_alloc();
      if (!e) return -ENOMEM;
      rte_tel_data_start_dict(e);
      rte_tel_data_add_dict_string(e, "policy", clip(p.policy).c_str());
      rte_tel_data_add_dict_string(e, "segment_list", clip(p.segment_list).c_str());
      rte_tel_data_add_dict_u64(e, "weight", p.weight_configured);
      rte_tel_data_add_dict_string(e, "factor", fmt::format("{:.4f}", p.factor).c_str());
      rte_tel_data_add_dict_u64(e, "packets", p.packets);
      rte_tel_data_add_dict_u64(e, "bytes", p.bytes);
      rte_tel_data_add_dict_u64(e, "active_flows", p.active_flows);
      if (!p.load_group.empty())
        rte_tel_data_add_dict_string(e, "load_group", clip(p.load_group).c_str());
      rte_tel_data_add_dict_container(d, std::to_string(p.path_id).c_str(), e, 0);
    }
    return 0;
  });
}

// Path health probes (docs/design/probing.md), keyed by path id like /srv6gw/paths.
int cmd_probes(const char*, const char*, rte_tel_data* d) {
  return answer([d](App& app) {
    rte_tel_data_start_dict(d);
    if (!app.prober) return 0;
    unsigned n = 0;
    for (const engine::ProbePathView& v : app.prober->paths()) {
      if (n++ == RTE_TEL_MAX_DICT_ENTRIES) break;
      rte_tel_data* e = rte_tel_data_alloc();
      if (!e) return -ENOMEM;
      rte_tel_data_start_dict(e);
      rte_tel_data_add_dict_string(e, "policy", clip(v.policy).c_str());
      rte_tel_data_add_dict_string(e, "segment_list", clip(v.segment_list).c_str());
      rte_tel_data_add_dict_string(e, "state", engine::to_string(v.state));
      rte_tel_data_add_dict_u64(e, "last_change_ns", v.last_change_ns);
      rte_tel_data_add_dict_u64(e, "sent", v.sent);
      rte_tel_data_add_dict_u64(e, "answered", v.answered);
      rte_tel_data_add_dict_u64(e, "lost", v.lost);
      rte_tel_data_add_dict_u64(e, "late", v.late);
      rte_tel_data_add_dict_u64(e, "consecutive_lost", v.consecutive_lost);
      rte_tel_data_add_dict_string(e, "loss_ratio", fmt::format("{:.4f}", v.loss_ratio).c_str());
      rte_tel_data_add_dict_u64(e, "rtt_min_ns", v.rtt_min_ns);
      rte_tel_data_add_dict_u64(e, "rtt_avg_ns", v.rtt_avg_ns);
      rte_tel_data_add_dict_u64(e, "rtt_p99_ns", v.rtt_p99_ns);
      rte_tel_data_add_dict_u64(e, "traffic_class", v.traffic_class);
      rte_tel_data_add_dict_string(e, "traffic_class_source", v.traffic_class_source.c_str());
      // With rails a path probed by two rails is two entries: keyed "RAIL/PATH-ID" and naming
      // the rail (a single pair keeps the path id alone as the key).
      std::string key = std::to_string(v.path_id);
      if (!v.rail.empty()) {
        rte_tel_data_add_dict_string(e, "rail", clip(v.rail).c_str());
        key = clip(v.rail) + "/" + key;
      }
      rte_tel_data_add_dict_container(d, key.c_str(), e, 0);
    }
    return 0;
  });
}

int cmd_config(const char*, const char*, rte_tel_data* d) {
  return answer([d](App& app) {
    const config::GatewayConfig& c = app.gateway->running_config();
    rte_tel_data_start_dict(d);
    rte_tel_data_add_dict_string(d, "config_file", clip(app.options.config_path).c_str());
    rte_tel_data_add_dict_string(d, "host_port", clip(app.host.name).c_str());
    rte_tel_data_add_dict_string(d, "fabric_port", clip(app.fabric.name).c_str());
    rte_tel_data_add_dict_u64(d, "queues", app.config.queues);
    rte_tel_data_add_dict_u64(d, "workers", app.gateway->worker_count());
    rte_tel_data_add_dict_u64(d, "mbufs", app.config.mbufs);
    rte_tel_data_add_dict_string(d, "fabric_multiseg_tx", app.fabric.multiseg_tx ? "yes" : "no");
    rte_tel_data_add_dict_string(d, "source", net::to_string(c.source).c_str());
    rte_tel_data_add_dict_u64(d, "hop_limit", c.hop_limit);
    rte_tel_data_add_dict_string(d, "transparent_mac", c.transparent_mac ? "yes" : "no");
    if (c.fabric_nexthop_mac)
      rte_tel_data_add_dict_string(d, "fabric_nexthop_mac",
                                   net::to_string(*c.fabric_nexthop_mac).c_str());
    if (c.host_mac)
      rte_tel_data_add_dict_string(d, "host_mac", net::to_string(*c.host_mac).c_str());
    rte_tel_data_add_dict_string(d, "steering_miss", config::to_string(c.steering_miss));
    rte_tel_data_add_dict_string(d, "non_roce", config::to_string(c.non_roce));
    rte_tel_data_add_dict_string(d, "fabric_non_sid", config::to_string(c.fabric_non_sid));
    size_t lists = 0;
    for (const auto& p : c.policies) lists += p.segment_lists.size();
    rte_tel_data_add_dict_u64(d, "policies", c.policies.size());
    rte_tel_data_add_dict_u64(d, "segment_lists", lists);
    rte_tel_data_add_dict_u64(d, "steering_rules", app.gateway->runtime().steering_rule_count());
    rte_tel_data_add_dict_u64(d, "local_sid_count", c.local_sids.size());
    if (rte_tel_data* sids = rte_tel_data_alloc()) {
      rte_tel_data_start_array(sids, RTE_TEL_STRING_VAL);
      for (size_t i = 0; i < c.local_sids.size() && i < RTE_TEL_MAX_ARRAY_ENTRIES; ++i)
        rte_tel_data_add_array_string(sids, clip(net::to_string(c.local_sids[i].sid) + " " +
                                                 srv6::to_string(c.local_sids[i].behavior))
                                                .c_str());
      rte_tel_data_add_dict_container(d, "local_sids", sids, 0);
    }
    if (rte_tel_data* names = rte_tel_data_alloc()) {
      rte_tel_data_start_array(names, RTE_TEL_STRING_VAL);
      for (size_t i = 0; i < c.policies.size() && i < RTE_TEL_MAX_ARRAY_ENTRIES; ++i)
        rte_tel_data_add_array_string(names, clip(c.policies[i].name).c_str());
      rte_tel_data_add_dict_container(d, "policy_names", names, 0);
    }
    return 0;
  });
}

// Per rail: its ports and its workers' totals, parameter = a rail name (optional).
int cmd_rails(const char*, const char* params, rte_tel_data* d) {
  const std::string want = params ? params : "";
  return answer([d, &want](App& app) {
    Snapshot s = take_snapshot(app);
    rte_tel_data_start_dict(d);
    for (size_t r = 0; r < s.rails.size() && r < app.rails.size(); ++r) {
      const RailSnapshot& rs = s.rails[r];
      if (!want.empty() && rs.name != want) continue;
      rte_tel_data* rail = rte_tel_data_alloc();
      if (!rail) continue;
      rte_tel_data_start_dict(rail);
      add_counters(rail, rs.total);
      rte_tel_data_add_dict_u64(rail, "first_worker", app.rails[r].first_worker);
      rte_tel_data_add_dict_u64(rail, "workers", app.rails[r].config.queues);
      add_container(rail, "host_port", port_container(rs.host));
      add_container(rail, "fabric_port", port_container(rs.fabric));
      rte_tel_data_add_dict_container(d, clip(rs.name).c_str(), rail, 0);
    }
    return 0;
  });
}

}  // namespace

void register_telemetry(App& app) {
  g_app.store(&app, std::memory_order_release);
  rte_telemetry_register_cmd("/srv6gw/stats", cmd_stats,
                             "srv6gw totals, drops by reason, parse/decap statuses, ports. "
                             "No parameters");
  rte_telemetry_register_cmd("/srv6gw/workers", cmd_workers,
                             "srv6gw counters per worker lcore. No parameters");
  rte_telemetry_register_cmd("/srv6gw/paths", cmd_paths,
                             "srv6gw packets/bytes per policy segment list. Parameter: "
                             "policy name (optional)");
  rte_telemetry_register_cmd("/srv6gw/probes", cmd_probes,
                             "srv6gw path health probes per segment list: state, loss, RTT. "
                             "No parameters");
  rte_telemetry_register_cmd("/srv6gw/rails", cmd_rails,
                             "srv6gw totals and ports per rail. Parameter: rail name (optional)");
  rte_telemetry_register_cmd("/srv6gw/config", cmd_config,
                             "srv6gw running configuration summary. No parameters");
}

}  // namespace srv6gw::app
