// SPDX-License-Identifier: BSD-3-Clause
// What the agent needs from the thing that runs the configuration: publish a whole new
// configuration (all or nothing) and report counters. The daemon adapts its
// dataplane::Gateway with GatewaySink; tests use a fake.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "config/model.hpp"
#include "dataplane/control/gateway.hpp"
#include "dataplane/counters.hpp"
#include "engine/probe_monitor.hpp"

namespace srv6gw::agent {

struct PortCounters {
  std::string role;  // "host" / "fabric"
  std::string name;
  uint64_t rx_packets = 0, rx_bytes = 0, tx_packets = 0, tx_bytes = 0;
  uint64_t rx_missed = 0, rx_errors = 0, tx_errors = 0, rx_nombuf = 0;
  std::string rail = config::kImplicitRailName;  // the rail the port belongs to
};

struct StatsSnapshot {
  std::vector<PortCounters> ports;
  std::vector<dataplane::WorkerCounters> workers;  // index = worker index
  std::vector<dataplane::Gateway::PathStats> paths;
  std::vector<engine::ProbePathView> probes;  // probed paths (docs/design/probing.md); may be empty
  std::vector<std::string> worker_rails;      // index = worker index: its rail's name
};

class StateSink {
 public:
  virtual ~StateSink() = default;
  // Publishes `cfg` to the data plane. All or nothing: on error nothing changed. Must not
  // block workers (the Gateway publishes lock-free). Called by one agent thread at a time,
  // always with a configuration the agent validated (as config::validate() would).
  virtual std::optional<config::ConfigError> apply(const config::GatewayConfig& cfg) = 0;
  // apply() given what changed in the steering rules since the configuration last applied
  // (cfg is still the whole result): lets the data plane edit only those entries. The
  // default ignores the delta.
  virtual std::optional<config::ConfigError> apply_delta(const config::GatewayConfig& cfg,
                                                         const policy::SteeringDelta& delta) {
    (void)delta;
    return apply(cfg);
  }
  // Counters now. Any agent thread.
  virtual StatsSnapshot stats() = 0;
};

// Adapts a dataplane::Gateway. `control_mutex` (may be null) is the daemon's lock that
// serialises its own control-side Gateway calls (reclaim, telemetry); every Gateway call of
// the agent is made under it. `ports` reads port counters (may be empty), e.g.
// ethdev_port_counters below.
class GatewaySink final : public StateSink {
 public:
  GatewaySink(dataplane::Gateway& gateway, std::mutex* control_mutex = nullptr,
              std::function<std::vector<PortCounters>()> ports = {});
  std::optional<config::ConfigError> apply(const config::GatewayConfig& cfg) override;
  std::optional<config::ConfigError> apply_delta(const config::GatewayConfig& cfg,
                                                 const policy::SteeringDelta& delta) override;
  StatsSnapshot stats() override;
  // Where the path health probes' view comes from (the daemon's prober); called under
  // `control_mutex` by stats(). Unset = no probe statistics.
  void set_probe_source(std::function<std::vector<engine::ProbePathView>()> probes) {
    probes_ = std::move(probes);
  }

 private:
  dataplane::Gateway& gateway_;
  std::mutex* control_mutex_;
  std::function<std::vector<PortCounters>()> ports_;
  std::function<std::vector<engine::ProbePathView>()> probes_;
};

// rte_eth_stats of one started port (control thread).
PortCounters ethdev_port_counters(uint16_t port_id, std::string role, std::string name);

}  // namespace srv6gw::agent
