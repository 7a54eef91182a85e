// SPDX-License-Identifier: BSD-3-Clause
#include <rte_ethdev.h>

#include <utility>

#include "agent/state_sink.hpp"

namespace srv6gw::agent {

GatewaySink::GatewaySink(dataplane::Gateway& gateway, std::mutex* control_mutex,
                         std::function<std::vector<PortCounters>()> ports)
    : gateway_(gateway), control_mutex_(control_mutex), ports_(std::move(ports)) {}

std::optional<config::ConfigError> GatewaySink::apply(const config::GatewayConfig& cfg) {
  std::unique_lock<std::mutex> lock;
  if (control_mutex_) lock = std::unique_lock(*control_mutex_);
  // The agent only publishes configurations it validated (ConfigIndex, checked against
  // config::validate() by tests/agent/test_config_index.cpp).
  return gateway_.apply_validated(cfg);
}

std::optional<config::ConfigError> GatewaySink::apply_delta(const config::GatewayConfig& cfg,
                                                            const policy::SteeringDelta& delta) {
  std::unique_lock<std::mutex> lock;
  if (control_mutex_) lock = std::unique_lock(*control_mutex_);
  return gateway_.apply_delta(cfg, delta);
}

StatsSnapshot GatewaySink::stats() {
  StatsSnapshot s;
  if (ports_) s.ports = ports_();
  std::unique_lock<std::mutex> lock;
  if (control_mutex_) lock = std::unique_lock(*control_mutex_);
  const unsigned n = gateway_.worker_count();
  s.workers.reserve(n);
  for (unsigned i = 0; i < n; ++i) s.workers.push_back(gateway_.worker_counters(i));
  const std::vector<config::Rail> rails = config::effective_rails(gateway_.running_config());
  for (unsigned i = 0; i < n; ++i) {
    const unsigned r = gateway_.worker_rail(i);
    s.worker_rails.push_back(r < rails.size() ? rails[r].name : config::kImplicitRailName);
  }
  s.paths = gateway_.path_stats();
  if (probes_) s.probes = probes_();
  return s;
}

PortCounters ethdev_port_counters(uint16_t port_id, std::string role, std::string name) {
  PortCounters p;
  p.role = std::move(role);
  p.name = std::move(name);
  rte_eth_stats st{};
  if (rte_eth_stats_get(port_id, &st) == 0) {
    p.rx_packets = st.ipackets;
    p.rx_bytes = st.ibytes;
    p.tx_packets = st.opackets;
    p.tx_bytes = st.obytes;
    p.rx_missed = st.imissed;
    p.rx_errors = st.ierrors;
    p.tx_errors = st.oerrors;
    p.rx_nombuf = st.rx_nombuf;
  }
  return p;
}

}  // namespace srv6gw::agent
