// SPDX-License-Identifier: BSD-3-Clause
// Statistics of the running gateway (control layer): per-worker counters summed by the main
// lcore, per-port ethdev counters, the periodic testpmd-style line and the final report.
#pragma once

#include <rte_ethdev.h>

#include <cstdint>
#include <string>
#include <vector>

#include "dataplane/control/gateway.hpp"
#include "dataplane/counters.hpp"
#include "net/addr.hpp"
#include "ports.hpp"

namespace srv6gw::app {

struct App;

struct PortSnapshot {
  std::string role, name;
  uint16_t id = 0;
  net::MacAddr mac;
  rte_eth_stats eth{};
};

// One rail's ports and its workers' counters summed (every rail, single pair included).
struct RailSnapshot {
  std::string name;
  PortSnapshot host, fabric;
  dataplane::WorkerCounters total;
};

struct Snapshot {
  uint64_t tsc = 0;
  dataplane::WorkerCounters total;
  std::vector<dataplane::WorkerCounters> workers;
  PortSnapshot host, fabric;  // rail 0's
  std::vector<RailSnapshot> rails;
  std::vector<std::string> worker_rails;  // index = worker: its rail's name
  bool named_rails = false;               // the configuration has rails (not a single pair)
  std::vector<Pools::Usage> pools;        // same order as App::pools_at_start
};

using dataplane::accumulate;
using dataplane::total_drops;

// Reads the workers' counters (racy reads of monotonic 64-bit values) and the ports' stats.
Snapshot take_snapshot(App& app);

// The rates between two snapshots: for a single pair one line, e.g.
// "host rx 1.20 Mpps tx 1.20 Mpps | fabric rx ... | encap 1.20 M/s decap ... | 85 cycles/pkt";
// with rails the same figures summed over every rail ("all rails: host rx ..."), then one line
// per rail ("rail gpu0: host rx ...").
std::vector<std::string> interval_lines(const Snapshot& prev, const Snapshot& cur);

// The exit report: ports, workers, policies/paths, drops and statuses by name (non-zero).
std::string final_report(const App& app, const Snapshot& s,
                         const std::vector<dataplane::Gateway::PathStats>& paths);

// The same figures as JSON (for scripts: --stats-json); `engine_json` (the local SR engine's
// object, EngineRunner::json()) joins as "engine" unless empty.
std::string final_json(const App& app, const Snapshot& s,
                       const std::vector<dataplane::Gateway::PathStats>& paths,
                       const std::string& engine_json);

}  // namespace srv6gw::app
