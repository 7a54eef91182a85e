// SPDX-License-Identifier: BSD-3-Clause
// The gateway's Prometheus endpoint (--metrics-address): an HTTP listener that answers
// GET /metrics in the Prometheus text format. The listener is prometheus-cpp's Exposer
// (Debian's prometheus-cpp-dev, civetweb threads of its own, never a worker lcore); each
// scrape reads the control state under App::control_mutex, like the telemetry commands.
//
// Series (names follow the Prometheus conventions: base units, _total on counters):
//   srv6gw_worker_<counter>_total{worker}        every plain worker counter; *_tsc as seconds
//   srv6gw_dropped_packets_total{reason}         drops by reason, summed over workers
//   srv6gw_{parse,decap,probe}_status_packets_total{status}
//   srv6gw_port_*{port,device}                   ethdev counters of both ports
//   srv6gw_path_*{policy,segment_list,path_id}   packets, bytes, weight, factor, flows, probes
//   srv6gw_engine_*                              decisions by reason, polls, events, publishes
//   srv6gw_agent_generation, srv6gw_build_info, configuration sizes, uptime, mbufs in use
// Cardinality: workers x ~25 + ~60 reasons/statuses + 2 ports x 8 + segment lists x 14 +
// ~20. Steering rules are only counted (srv6gw_steering_rules): a million rules stay one
// series. Segment lists are bounded by the configuration (policies x lists).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace prometheus {
class Exposer;
}

namespace srv6gw::app {

struct App;

// The bind address civetweb gets for --metrics-address SPEC: "PORT" listens on 127.0.0.1,
// "IPV4:PORT" and "[IPV6]:PORT" as given. nullopt and `error` naming the fault otherwise.
std::optional<std::string> metrics_bind_address(const std::string& spec, std::string& error);

class MetricsServer {
 public:
  // The agent's configuration generation, when an agent runs (called under control_mutex).
  using GenerationSource = std::function<std::optional<uint64_t>()>;

  // Listens on `bind` (metrics_bind_address()); null and `error` when it cannot. `app` must
  // outlive the server; stop (destroy) it before the state it reads is torn down.
  static std::unique_ptr<MetricsServer> start(App& app, const std::string& bind,
                                              GenerationSource generation, std::string& error);
  ~MetricsServer();

  // "HOST:PORT" with the port bound (when the address asked for port 0).
  const std::string& address() const { return address_; }

 private:
  MetricsServer() = default;
  std::shared_ptr<class MetricsCollector> collector_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::string address_;
};

}  // namespace srv6gw::app
