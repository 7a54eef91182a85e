// SPDX-License-Identifier: BSD-3-Clause
// The running gateway process as the control layer sees it: options, ports, pools, the
// Gateway object and the worker lcores. Lives on the main lcore; the telemetry thread reads
// it under `control_mutex`.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "config/model.hpp"
#include "dataplane/control/gateway.hpp"
#include "engine_runner.hpp"
#include "options.hpp"
#include "ports.hpp"
#include "probe_runner.hpp"
#include "worker.hpp"

namespace srv6gw::app {

// One rail as running (config::effective_rails(), same order): its ports and its workers.
struct RailSetup {
  config::Rail config;          // name, devices, queues, source, MACs, local SIDs
  PortSetup* host = nullptr;    // rail 0: &App::host; others: in App::more_ports
  PortSetup* fabric = nullptr;  // rail 0: &App::fabric
  unsigned first_worker = 0;    // workers first_worker .. first_worker + config.queues - 1
};

struct App {
  Options options;
  config::GatewayConfig config;  // as loaded, with command-line overrides applied
  PortSetup host;                // rail 0's (the single pair's) ports: link watch, prober
  PortSetup fabric;
  std::deque<PortSetup> more_ports;  // the ports of rails 1..N-1 (stable addresses)
  std::vector<RailSetup> rails;      // every rail, rail 0 first; set by bring_up
  Pools pools;
  std::unique_ptr<dataplane::Gateway> gateway;
  // Local SR engine; created by the control loop, used on the main lcore under control_mutex.
  std::unique_ptr<EngineRunner> engine;
  // Path health prober (docs/design/probing.md); created after the engine it drives, same rules.
  std::unique_ptr<ProbeRunner> prober;
  // The gRPC agent's event bus (null with --no-agent); set before the control loop starts,
  // cleared under control_mutex before the agent stops.
  agent::EventBus* event_bus = nullptr;
  // Worker i runs on worker_lcores[i]; workers are numbered rail by rail (RailSetup).
  std::vector<unsigned> worker_lcores;
  std::vector<WorkerArgs> worker_args;
  uint64_t start_tsc = 0;
  // Pool usage once the ports are up (RX rings filled) and before any worker runs: the
  // baseline a leak-free gateway returns to when traffic stops. Written by main before the
  // workers launch, read-only afterwards (telemetry thread, final report).
  std::vector<Pools::Usage> pools_at_start;

  // Serialises the Gateway's control-side calls (reclaim, path_stats, running_config) between
  // the main lcore and the telemetry thread; never taken by workers.
  std::mutex control_mutex;
  // Set by main once everything is up, cleared (under control_mutex) before teardown, so a
  // late telemetry request answers "not running" instead of touching freed state.
  bool running = false;
};

}  // namespace srv6gw::app
