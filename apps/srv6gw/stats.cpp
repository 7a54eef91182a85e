// SPDX-License-Identifier: BSD-3-Clause
#include "stats.hpp"

#include <fmt/format.h>
#include <rte_cycles.h>

#include <cstdio>

#include "app.hpp"

namespace srv6gw::app {

using dataplane::DropReason;
using dataplane::WorkerCounters;

void accumulate(WorkerCounters& into, const WorkerCounters& from) {
  into.rx_host += from.rx_host;
  into.rx_fabric += from.rx_fabric;
  into.rx_host_bytes += from.rx_host_bytes;
  into.rx_fabric_bytes += from.rx_fabric_bytes;
  into.tx_host += from.tx_host;
  into.tx_fabric += from.tx_fabric;
  into.tx_host_bytes += from.tx_host_bytes;
  into.tx_fabric_bytes += from.tx_fabric_bytes;
  into.encap += from.encap;
  into.decap += from.decap;
  into.passed_host_to_fabric += from.passed_host_to_fabric;
  into.passed_fabric_to_host += from.passed_fabric_to_host;
  into.inner_ce_marked += from.inner_ce_marked;
  into.cnp_seen += from.cnp_seen;
  into.outer_ce_seen += from.outer_ce_seen;
  into.chained_header += from.chained_header;
  into.feedback_events += from.feedback_events;
  into.feedback_dropped += from.feedback_dropped;
  into.cnp_reflected += from.cnp_reflected;
  into.balanced_overflow += from.balanced_overflow;
  for (size_t i = 0; i < into.drops.size(); ++i) into.drops[i] += from.drops[i];
  for (size_t i = 0; i < into.parse_status.size(); ++i)
    into.parse_status[i] += from.parse_status[i];
  for (size_t i = 0; i < into.decap_status.size(); ++i)
    into.decap_status[i] += from.decap_status[i];
  into.bursts += from.bursts;
  into.busy_tsc += from.busy_tsc;
  into.pipeline_tsc += from.pipeline_tsc;
  for (size_t i = 0; i < into.rx_burst_histogram.size(); ++i)
    into.rx_burst_histogram[i] += from.rx_burst_histogram[i];
}

uint64_t total_drops(const WorkerCounters& c) {
  uint64_t n = 0;
  for (uint64_t d : c.drops) n += d;
  return n;
}

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
  for (auto [setup, snap] : {std::pair{&app.host, &s.host}, std::pair{&app.fabric, &s.fabric}}) {
    snap->role = setup->role;
    snap->name = setup->name;
    snap->id = setup->port_id;
    snap->mac = setup->mac;
    rte_eth_stats_get(setup->port_id, &snap->eth);
  }
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

std::string json_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 2);
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20)
          out += fmt::format("\\u{:04x}", unsigned(c));
        else
          out += char(c);
    }
  }
  return out;
}

}  // namespace

std::string interval_line(const Snapshot& prev, const Snapshot& cur) {
  const double dt = seconds_between(prev.tsc, cur.tsc);
  if (dt <= 0) return {};
  auto rate = [dt](uint64_t a, uint64_t b) { return human_rate(double(b - a) / dt); };
  const auto& p = prev.total;
  const auto& c = cur.total;
  const uint64_t rx = (c.rx_host + c.rx_fabric) - (p.rx_host + p.rx_fabric);
  const uint64_t pass_prev = p.passed_host_to_fabric + p.passed_fabric_to_host;
  const uint64_t pass_cur = c.passed_host_to_fabric + c.passed_fabric_to_host;
  return fmt::format(
      "host rx {}pps tx {}pps | fabric rx {}pps tx {}pps | encap {}/s decap {}/s pass {}/s "
      "drop {}/s | missed {} | {:.1f} cycles/pkt",
      rate(prev.host.eth.ipackets, cur.host.eth.ipackets),
      rate(prev.host.eth.opackets, cur.host.eth.opackets),
      rate(prev.fabric.eth.ipackets, cur.fabric.eth.ipackets),
      rate(prev.fabric.eth.opackets, cur.fabric.eth.opackets), rate(p.encap, c.encap),
      rate(p.decap, c.decap), rate(pass_prev, pass_cur), rate(total_drops(p), total_drops(c)),
      (cur.host.eth.imissed + cur.fabric.eth.imissed) -
          (prev.host.eth.imissed + prev.fabric.eth.imissed),
      cycles_per_packet(c.busy_tsc - p.busy_tsc, rx));
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
  for (const PortSnapshot* p : {&s.host, &s.fabric})
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
  for (size_t i = 0; i < s.workers.size(); ++i)
    worker_row(std::to_string(i),
               i < app.worker_lcores.size() ? std::to_string(app.worker_lcores[i]) : "-",
               std::to_string(i), s.workers[i]);
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
  for (size_t i = 0; i < t.drops.size(); ++i)
    if (t.drops[i])
      out(fmt::format("  drop {:<28} {:>12}", dataplane::to_string(DropReason(i)), t.drops[i]));
  for (size_t i = 0; i < t.parse_status.size(); ++i)
    if (t.parse_status[i])
      out(fmt::format("  parse {:<27} {:>12}", net::to_string(net::ParseStatus(i)),
                      t.parse_status[i]));
  for (size_t i = 0; i < t.decap_status.size(); ++i)
    if (t.decap_status[i])
      out(fmt::format("  decap {:<27} {:>12}", srv6::to_string(srv6::DecapStatus(i)),
                      t.decap_status[i]));
  for (size_t i = 0; i < s.pools.size(); ++i)
    out(fmt::format("mempool {}: {} of {} mbufs in use ({} when the workers started)",
                    s.pools[i].name, s.pools[i].in_use, s.pools[i].size,
                    i < app.pools_at_start.size() ? app.pools_at_start[i].in_use : 0));
  return r;
}

std::string final_json(const App& app, const Snapshot& s,
                       const std::vector<dataplane::Gateway::PathStats>& paths,
                       const std::string& engine_json) {
  std::string j = "{";
  j += fmt::format("\"elapsed_s\":{:.6f},", seconds_between(app.start_tsc, s.tsc));
  j += "\"ports\":{";
  bool first = true;
  for (const PortSnapshot* p : {&s.host, &s.fabric}) {
    if (!first) j += ',';
    first = false;
    j += fmt::format(
        "\"{}\":{{\"name\":\"{}\",\"id\":{},\"mac\":\"{}\",\"ipackets\":{},\"ibytes\":{},"
        "\"opackets\":{},"
        "\"obytes\":{},\"imissed\":{},\"ierrors\":{},\"oerrors\":{},\"rx_nombuf\":{}}}",
        p->role, json_escape(p->name), p->id, net::to_string(p->mac), p->eth.ipackets,
        p->eth.ibytes, p->eth.opackets, p->eth.obytes, p->eth.imissed, p->eth.ierrors,
        p->eth.oerrors, p->eth.rx_nombuf);
  }
  j += "},";
  auto counters_json = [](const WorkerCounters& c) {
    std::string o = fmt::format(
        "{{\"rx_host\":{},\"rx_fabric\":{},\"rx_host_bytes\":{},\"rx_fabric_bytes\":{},"
        "\"tx_host\":{},\"tx_fabric\":{},\"tx_host_bytes\":{},\"tx_fabric_bytes\":{},"
        "\"encap\":{},\"decap\":{},\"passed_host_to_fabric\":{},\"passed_fabric_to_host\":{},"
        "\"inner_ce_marked\":{},\"cnp_seen\":{},\"outer_ce_seen\":{},\"chained_header\":{},"
        "\"bursts\":{},\"busy_tsc\":{},\"cycles_per_packet\":{:.2f},\"drops_total\":{}",
        c.rx_host, c.rx_fabric, c.rx_host_bytes, c.rx_fabric_bytes, c.tx_host, c.tx_fabric,
        c.tx_host_bytes, c.tx_fabric_bytes, c.encap, c.decap, c.passed_host_to_fabric,
        c.passed_fabric_to_host, c.inner_ce_marked, c.cnp_seen, c.outer_ce_seen, c.chained_header,
        c.bursts, c.busy_tsc, cycles_per_packet(c.busy_tsc, c.rx_host + c.rx_fabric),
        total_drops(c));
    o += fmt::format(",\"feedback_events\":{},\"feedback_dropped\":{},\"cnp_reflected\":{}",
                     c.feedback_events, c.feedback_dropped, c.cnp_reflected);
    o += fmt::format(",\"balanced_overflow\":{}", c.balanced_overflow);
    o += fmt::format(",\"pipeline_tsc\":{},\"pipeline_cycles_per_packet\":{:.2f}", c.pipeline_tsc,
                     cycles_per_packet(c.pipeline_tsc, c.rx_host + c.rx_fabric));
    // RX polls by burst size: index = packets returned by one rte_eth_rx_burst, 0 = empty.
    o += ",\"burst_histogram\":[";
    for (size_t i = 0; i < c.rx_burst_histogram.size(); ++i)
      o += fmt::format("{}{}", i ? "," : "", c.rx_burst_histogram[i]);
    o += "]";
    o += ",\"drops\":{";
    for (size_t i = 0; i < c.drops.size(); ++i)
      o +=
          fmt::format("{}\"{}\":{}", i ? "," : "", dataplane::to_string(DropReason(i)), c.drops[i]);
    o += "},\"parse_status\":{";
    for (size_t i = 0; i < c.parse_status.size(); ++i)
      o += fmt::format("{}\"{}\":{}", i ? "," : "", net::to_string(net::ParseStatus(i)),
                       c.parse_status[i]);
    o += "},\"decap_status\":{";
    for (size_t i = 0; i < c.decap_status.size(); ++i)
      o += fmt::format("{}\"{}\":{}", i ? "," : "", srv6::to_string(srv6::DecapStatus(i)),
                       c.decap_status[i]);
    o += "}}";
    return o;
  };
  j += "\"total\":" + counters_json(s.total) + ",\"workers\":[";
  for (size_t i = 0; i < s.workers.size(); ++i) {
    if (i) j += ',';
    j += counters_json(s.workers[i]);
  }
  // mbufs out of each pool now and when the workers started: equal once traffic has stopped,
  // unless the data path leaks (tests/integration/test_malformed_corpus.py, tools/soak.py).
  j += "],\"mempools\":[";
  for (size_t i = 0; i < s.pools.size(); ++i) {
    const auto& p = s.pools[i];
    j += fmt::format("{}{{\"name\":\"{}\",\"size\":{},\"in_use\":{},\"in_use_at_start\":{}}}",
                     i ? "," : "", json_escape(p.name), p.size, p.in_use,
                     i < app.pools_at_start.size() ? app.pools_at_start[i].in_use : 0);
  }
  j += "],\"paths\":[";
  for (size_t i = 0; i < paths.size(); ++i) {
    const auto& p = paths[i];
    if (i) j += ',';
    j += fmt::format(
        "{{\"policy\":\"{}\",\"segment_list\":\"{}\",\"path_id\":{},\"weight\":{},"
        "\"factor\":{:.6f},\"packets\":{},\"bytes\":{},\"active_flows\":{},"
        "\"load_group\":\"{}\"}}",
        json_escape(p.policy), json_escape(p.segment_list), p.path_id, p.weight_configured,
        p.factor, p.packets, p.bytes, p.active_flows, json_escape(p.load_group));
  }
  j += "]";
  if (!engine_json.empty()) j += ",\"engine\":" + engine_json;
  j += "}\n";
  return j;
}

}  // namespace srv6gw::app
