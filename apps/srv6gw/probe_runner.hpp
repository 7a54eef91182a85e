// SPDX-License-Identifier: BSD-3-Clause
// The prober in the daemon (docs/design/probing.md): on the main lcore, every probe interval,
// builds one probe per segment list of each policy that names a remote probe SID and hands them to
// worker 0 (Gateway::send_probes); drains the replies the workers received, feeds the
// ProbeMonitor (sequence matching, RTT, loss, up/down), and turns its transitions into the
// engine's probe down/up (EngineRunner::set_probe_state: published at once, streamed as
// path_state events). Every call is made with the App's control_mutex held.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/model.hpp"
#include "dataplane/control/gateway.hpp"
#include "engine/probe_monitor.hpp"
#include "engine_runner.hpp"
#include "policy/runtime.hpp"

struct rte_mempool;

namespace srv6gw::app {

class ProbeRunner {
 public:
  // `pool`: where probe mbufs come from (the fabric port's packet pool).
  ProbeRunner(dataplane::Gateway& gw, EngineRunner& engine, rte_mempool* pool,
              const net::MacAddr& fabric_port_mac);

  // One pass: resynchronises with the running configuration when it changed, sends the
  // probes that are due, drains replies, declares losses and applies state changes.
  void poll(uint64_t now_ns);

  // How often poll() wants to run: a fraction of the probe interval (10 ms when idle).
  uint32_t tick_interval_us() const;

  struct Stats {
    uint64_t polls = 0;
    uint64_t sent = 0;          // handed to worker 0
    uint64_t alloc_failed = 0;  // no mbuf for a probe (counted lost by the monitor)
    uint64_t ring_full = 0;     // the probe TX ring refused a probe (counted lost)
    uint64_t replies = 0;       // drained from the reply ring
    uint64_t clock_skew = 0;    // reply whose receive TSC precedes its send TSC (ignored)
    uint64_t busy_ns = 0;       // total time spent in poll()
  };
  const Stats& stats() const { return stats_; }
  const engine::ProbeMonitor& monitor() const { return monitor_; }
  // Paths probed now (empty when no policy names a probe-sid or probing is off).
  size_t probed_paths() const { return probed_.size(); }

  // Human-readable summary and a JSON object (final statistics, telemetry).
  std::string report() const;
  std::string json() const;

 private:
  struct Probed {
    uint16_t path_id = 0;
    uint8_t traffic_class = 0;  // config::probe_classes(): the policy's RoCE class
    net::Ipv6Addr source;
    std::vector<net::Ipv6Addr> segments;  // transit SIDs + the remote's probe SID
    std::vector<net::Ipv6Addr> returns;   // reverse transit SIDs + our probe SID
  };

  void sync();
  void send_all(uint64_t now_ns);
  void drain_replies(uint64_t now_ns);

  dataplane::Gateway& gw_;
  EngineRunner& engine_;
  rte_mempool* pool_;
  net::MacAddr fabric_port_mac_;
  net::MacAddr nexthop_mac_;
  policy::Settings fabric_settings_;  // the fabric VLAN tag and PCP map (running config)
  uint8_t hop_limit_ = 64;
  engine::ProbeMonitor monitor_;
  std::vector<Probed> probed_;
  uint64_t synced_generation_ = ~uint64_t(0);
  uint64_t next_send_ns_ = 0;
  double ns_per_tsc_ = 1.0;
  std::vector<engine::ProbeTransition> transitions_;
  std::vector<dataplane::ProbeReply> replies_;
  Stats stats_;
};

}  // namespace srv6gw::app
