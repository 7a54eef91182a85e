// SPDX-License-Identifier: BSD-3-Clause
#include "stats.hpp"

#include <fmt/format.h>
#include <rte_cycles.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "app.hpp"

namespace srv6gw::app {

using dataplane::WorkerCounters;

Snapshot take_snapshot(App& app) {
  Snapshot s;
  s.tsc = rte_rdtsc();
  const unsigned n = app.gateway ? app.gateway->worker_count() : 0;
  s.workers.reserve(n);
  for (unsigned i = 0; i < n; ++i) {
    // A racy copy of counters the worker keeps incrementing: each 64-bit field is read whole
    // on x86-64, and sums only need to be monotonic, not a consistent cut.
    s.workers.push_back(app.gateway->worker_counters(i));
    accumulate(s.total, s.workers.back());
  }
  auto port_snapshot = [](const PortSetup& setup, PortSnapshot& snap) {
    snap.role = setup.role;
    snap.name = setup.name;
    snap.id = setup.port_id;
    snap.mac = setup.mac;
    rte_eth_stats_get(setup.port_id, &snap.eth);
  };
  port_snapshot(app.host, s.host);
  port_snapshot(app.fabric, s.fabric);
  for (const RailSetup& rail : app.rails) {
    RailSnapshot& r = s.rails.emplace_back();
    r.name = rail.config.name;
    port_snapshot(*rail.host, r.host);
    port_snapshot(*rail.fabric, r.fabric);
    for (unsigned i = rail.first_worker; i < rail.first_worker + rail.config.queues && i < n; ++i)
      accumulate(r.total, s.workers[i]);
  }
  s.named_rails = !app.config.rails.empty();
  s.worker_rails.resize(n);
  for (const RailSetup& rail : app.rails)
    for (unsigned i = rail.first_worker; i < rail.first_worker + rail.config.queues && i < n; ++i)
      s.worker_rails[i] = rail.config.name;
  s.pools = app.pools.usage();
  return s;
}

namespace {

double seconds_between(uint64_t a, uint64_t b) {
  return b > a ? double(b - a) / double(rte_get_tsc_hz()) : 0.0;
}

// 1234567 -> "1.23 M", for rates.
std::string human_rate(double per_second) {
  if (per_second >= 1e9) return fmt::format("{:.2f} G", per_second / 1e9);
  if (per_second >= 1e6) return fmt::format("{:.2f} M", per_second / 1e6);
  if (per_second >= 1e3) return fmt::format("{:.2f} k", per_second / 1e3);
  return fmt::format("{:.0f} ", per_second);
}

double cycles_per_packet(uint64_t busy, uint64_t packets) {
  return packets ? double(busy) / double(packets) : 0.0;
}

}  // namespace

namespace {

// One interval's rates of a host/fabric port pair and the workers serving it.
std::string rates_line(double dt, const rte_eth_stats& host0, const rte_eth_stats& host1,
                       const rte_eth_stats& fabric0, const rte_eth_stats& fabric1,
                       const WorkerCounters& p, const WorkerCounters& c) {
  auto rate = [dt](uint64_t a, uint64_t b) { return human_rate(double(b - a) / dt); };
  const uint64_t rx = (c.rx_host + c.rx_fabric) - (p.rx_host + p.rx_fabric);
  const uint64_t pass_prev = p.passed_host_to_fabric + p.passed_fabric_to_host;
  const uint64_t pass_cur = c.passed_host_to_fabric + c.passed_fabric_to_host;
  return fmt::format(
      "host rx {}pps tx {}pps | fabric rx {}pps tx {}pps | encap {}/s decap {}/s pass {}/s "
      "drop {}/s | missed {} | {:.1f} cycles/pkt",
      rate(host0.ipackets, host1.ipackets), rate(host0.opackets, host1.opackets),
      rate(fabric0.ipackets, fabric1.ipackets), rate(fabric0.opackets, fabric1.opackets),
      rate(p.encap, c.encap), rate(p.decap, c.decap), rate(pass_prev, pass_cur),
      rate(total_drops(p), total_drops(c)),
      (host1.imissed + fabric1.imissed) - (host0.imissed + fabric0.imissed),
      cycles_per_packet(c.busy_tsc - p.busy_tsc, rx));
}

// The counters the line shows, summed over every rail's port of one role.
rte_eth_stats sum_ports(const std::vector<RailSnapshot>& rails, bool host) {
  rte_eth_stats sum{};
  for (const RailSnapshot& r : rails) {
    const rte_eth_stats& e = host ? r.host.eth : r.fabric.eth;
    sum.ipackets += e.ipackets;
    sum.opackets += e.opackets;
    sum.imissed += e.imissed;
  }
  return sum;
}

}  // namespace

std::vector<std::string> interval_lines(const Snapshot& prev, const Snapshot& cur) {
  const double dt = seconds_between(prev.tsc, cur.tsc);
  if (dt <= 0) return {};
  if (!cur.named_rails || prev.rails.size() != cur.rails.size()) {
    return {rates_line(dt, prev.host.eth, cur.host.eth, prev.fabric.eth, cur.fabric.eth, prev.total,
                       cur.total)};
  }
  std::vector<std::string> lines;
  lines.push_back("all rails: " + rates_line(dt, sum_ports(prev.rails, true),
                                             sum_ports(cur.rails, true),
                                             sum_ports(prev.rails, false),
                                             sum_ports(cur.rails, false), prev.total, cur.total));
  for (size_t i = 0; i < cur.rails.size(); ++i) {
    const RailSnapshot &a = prev.rails[i], &b = cur.rails[i];
    lines.push_back(
        "rail " + b.name + ": " +
        rates_line(dt, a.host.eth, b.host.eth, a.fabric.eth, b.fabric.eth, a.total, b.total));
  }
  return lines;
}

std::string final_report(const App& app, const Snapshot& s,
                         const std::vector<dataplane::Gateway::PathStats>& paths) {
  std::string r;
  auto out = [&r](const std::string& line) {
    r += line;
    r += '\n';
  };
  const double elapsed = seconds_between(app.start_tsc, s.tsc);
  out(fmt::format("==================== srv6gw final statistics ({:.3f} s) ====================",
                  elapsed));
  out(fmt::format("{:<7} {:<16} {:>4} {:>12} {:>14} {:>12} {:>14} {:>9} {:>9} {:>9} {:>9}", "port",
                  "name", "id", "rx-packets", "rx-bytes", "tx-packets", "tx-bytes", "rx-missed",
                  "rx-errors", "tx-errors", "rx-nombuf"));
  for (const RailSnapshot& rail : s.rails)
    for (const PortSnapshot* p : {&rail.host, &rail.fabric})
      out(fmt::format("{:<7} {:<16} {:>4} {:>12} {:>14} {:>12} {:>14} {:>9} {:>9} {:>9} {:>9}",
                      p->role, p->name, p->id, p->eth.ipackets, p->eth.ibytes, p->eth.opackets,
                      p->eth.obytes, p->eth.imissed, p->eth.ierrors, p->eth.oerrors,
                      p->eth.rx_nombuf));
  out("");
  out(
      fmt::format("{:<7} {:>5} {:>5} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} "
                  "{:>9} {:>10}",
                  "worker", "lcore", "queue", "rx-host", "rx-fabric", "tx-host", "tx-fabric",
                  "encap", "decap", "pass-h2f", "pass-f2h", "drops", "cycles/pkt"));
  auto worker_row = [&](const std::string& name, const std::string& lcore, const std::string& queue,
                        const WorkerCounters& c) {
    out(
        fmt::format("{:<7} {:>5} {:>5} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} "
                    "{:>9} {:>10.1f}",
                    name, lcore, queue, c.rx_host, c.rx_fabric, c.tx_host, c.tx_fabric, c.encap,
                    c.decap, c.passed_host_to_fabric, c.passed_fabric_to_host, total_drops(c),
                    cycles_per_packet(c.busy_tsc, c.rx_host + c.rx_fabric)));
  };
  for (const RailSetup& rail : app.rails)
    for (unsigned q = 0; q < rail.config.queues; ++q) {
      const size_t i = rail.first_worker + q;
      if (i >= s.workers.size()) break;
      worker_row(std::to_string(i),
                 i < app.worker_lcores.size() ? std::to_string(app.worker_lcores[i]) : "-",
                 std::to_string(q), s.workers[i]);
    }
  if (s.rails.size() > 1)
    for (const RailSnapshot& rail : s.rails) worker_row("rail " + rail.name, "", "", rail.total);
  worker_row("total", "", "", s.total);
  out("");

  if (!paths.empty()) {
    out(fmt::format("{:<20} {:<20} {:>7} {:>7} {:>7} {:>12} {:>14} {:>12}", "policy",
                    "segment-list", "path-id", "weight", "factor", "packets", "bytes",
                    "active-flows"));
    for (const auto& p : paths)
      out(fmt::format("{:<20} {:<20} {:>7} {:>7} {:>7.3f} {:>12} {:>14} {:>12}", p.policy,
                      p.segment_list, p.path_id, p.weight_configured, p.factor, p.packets, p.bytes,
                      p.load_group.empty() ? std::string("-") : std::to_string(p.active_flows)));
    out("");
  }

  const auto& t = s.total;
  out(
      fmt::format("events: inner-ce-marked {}  cnp-seen {}  outer-ce-seen {}  chained-header {}  "
                  "bursts {}",
                  t.inner_ce_marked, t.cnp_seen, t.outer_ce_seen, t.chained_header, t.bursts));
  out(fmt::format("feedback: events {}  dropped (ring full) {}  cnp-reflected {}",
                  t.feedback_events, t.feedback_dropped, t.cnp_reflected));
  if (t.balanced_overflow)
    out(fmt::format("balanced: {} flows placed by hash (flow table set full)",
                    t.balanced_overflow));
  out(fmt::format("drops: {} total", total_drops(t)));
  // Non-zero counts by reason, every group (drops, parse/decap/probe statuses).
  dataplane::for_each_counter(
      t, [](const char*, uint64_t) {},
      [&](const dataplane::CounterGroup& g) {
        for (size_t i = 0; i < g.values.size(); ++i)
          if (g.values[i])
            out(fmt::format("  {:<13} {:<20} {:>12}", g.name, g.reasons[i], g.values[i]));
      });
  for (size_t i = 0; i < s.pools.size(); ++i)
    out(fmt::format("mempool {}: {} of {} mbufs in use ({} when the workers started)",
                    s.pools[i].name, s.pools[i].in_use, s.pools[i].size,
                    i < app.pools_at_start.size() ? app.pools_at_start[i].in_use : 0));
  return r;
}

std::string final_json(const App& app, const Snapshot& s,
                       const std::vector<dataplane::Gateway::PathStats>& paths,
                       const std::string& engine_json) {
  using nlohmann::json;
  json j;
  j["elapsed_s"] = seconds_between(app.start_tsc, s.tsc);
  auto port_json = [](const PortSnapshot* p) {
    return json{{"name", p->name},
                {"id", p->id},
                {"mac", net::to_string(p->mac)},
                {"ipackets", p->eth.ipackets},
                {"ibytes", p->eth.ibytes},
                {"opackets", p->eth.opackets},
                {"obytes", p->eth.obytes},
                {"imissed", p->eth.imissed},
                {"ierrors", p->eth.ierrors},
                {"oerrors", p->eth.oerrors},
                {"rx_nombuf", p->eth.rx_nombuf}};
  };
  json& ports = j["ports"] = json::object();  // rail 0's (the single pair's)
  for (const PortSnapshot* p : {&s.host, &s.fabric}) ports[p->role] = port_json(p);
  auto counters_json = [](const WorkerCounters& c) {
    json o;
    dataplane::for_each_counter(
        c, [&](const char* name, uint64_t value) { o[name] = value; },
        [&](const dataplane::CounterGroup& g) {
          json& by_reason = o[g.name] = json::object();
          for (size_t i = 0; i < g.values.size(); ++i) by_reason[g.reasons[i]] = g.values[i];
        });
    const uint64_t rx = c.rx_host + c.rx_fabric;
    o["cycles_per_packet"] = cycles_per_packet(c.busy_tsc, rx);
    o["pipeline_cycles_per_packet"] = cycles_per_packet(c.pipeline_tsc, rx);
    o["drops_total"] = total_drops(c);
    // RX polls by burst size: index = packets returned by one rte_eth_rx_burst, 0 = empty.
    o["burst_histogram"] = c.rx_burst_histogram;
    return o;
  };
  j["total"] = counters_json(s.total);
  json& workers = j["workers"] = json::array();
  for (const WorkerCounters& w : s.workers) workers.push_back(counters_json(w));
  // Per rail: its ports and its workers summed (one entry, "0", for a single pair).
  json& rails = j["rails"] = json::array();
  for (size_t r = 0; r < s.rails.size() && r < app.rails.size(); ++r) {
    const RailSnapshot& rs = s.rails[r];
    json o = counters_json(rs.total);
    o["name"] = rs.name;
    o["first_worker"] = app.rails[r].first_worker;
    o["workers"] = app.rails[r].config.queues;
    o["host"] = port_json(&rs.host);
    o["fabric"] = port_json(&rs.fabric);
    rails.push_back(std::move(o));
  }
  // mbufs out of each pool now and when the workers started: equal once traffic has stopped,
  // unless the data path leaks (tests/integration/test_malformed_corpus.py, tools/soak.py).
  json& pools = j["mempools"] = json::array();
  for (size_t i = 0; i < s.pools.size(); ++i) {
    const auto& p = s.pools[i];
    pools.push_back(
        {{"name", p.name},
         {"size", p.size},
         {"in_use", p.in_use},
         {"in_use_at_start", i < app.pools_at_start.size() ? app.pools_at_start[i].in_use : 0}});
  }
  json& path_list = j["paths"] = json::array();
  for (const auto& p : paths)
    path_list.push_back({{"policy", p.policy},
                         {"segment_list", p.segment_list},
                         {"path_id", p.path_id},
                         {"weight", p.weight_configured},
                         {"factor", p.factor},
                         {"packets", p.packets},
                         {"bytes", p.bytes},
                         {"active_flows", p.active_flows},
                         {"load_group", p.load_group}});
  if (!engine_json.empty()) j["engine"] = json::parse(engine_json);
  return j.dump() + "\n";
}

}  // namespace srv6gw::app
