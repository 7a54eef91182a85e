// SPDX-License-Identifier: BSD-3-Clause
// The prober in the daemon (docs/design/probing.md): on the main lcore, every probe interval,
// builds one probe per segment list of each policy that names a remote probe SID, on every
// rail that can receive the replies (a local end-probe SID of its own or a shared one), and
// hands each rail's probes to that rail's first worker (Gateway::send_probes): they leave by
// the rail's fabric port with the rail's source, next-hop MAC and fabric VLAN tag. Drains the
// replies the workers received, feeds the rail's ProbeMonitor (sequence matching, RTT, loss,
// up/down), and turns the transitions into the engine's probe down/up
// (EngineRunner::set_probe_state: published at once, streamed as path_state events). The
// engine's path state is shared by the rails (policies are), so a path is down for it when it
// is down on every rail that probes it: a rail that cannot reach a path (rail-optimized
// fabrics give each rail its own plane) does not take it from the rails that can.
// Every call is made with the App's control_mutex held.
#pragma once

#include <cstdint>
#include <set>
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
  // Where a rail's probes come from: the packet pool of its fabric port and that port's MAC.
  struct RailPort {
    rte_mempool* pool = nullptr;
    net::MacAddr fabric_port_mac;
  };
  // `rails`: one per rail of config::effective_rails(), same order.
  ProbeRunner(dataplane::Gateway& gw, EngineRunner& engine, std::vector<RailPort> rails);

  // One pass: resynchronises with the running configuration when it changed, sends the
  // probes that are due, drains replies, declares losses and applies state changes.
  void poll(uint64_t now_ns);

  // How often poll() wants to run: a fraction of the probe interval (10 ms when idle).
  uint32_t tick_interval_us() const;

  struct Stats {
    uint64_t polls = 0;
    uint64_t sent = 0;          // handed to the rails' first workers
    uint64_t alloc_failed = 0;  // no mbuf for a probe (counted lost by the monitor)
    uint64_t ring_full = 0;     // the probe TX ring refused a probe (counted lost)
    uint64_t replies = 0;       // drained from the reply ring
    uint64_t clock_skew = 0;    // reply whose receive TSC precedes its send TSC (ignored)
    uint64_t busy_ns = 0;       // total time spent in poll()
  };
  const Stats& stats() const { return stats_; }
  // Every rail's probed paths (rail by rail) and the monitors' counters summed.
  std::vector<engine::ProbePathView> paths() const;
  engine::ProbeMonitorCounters counters() const;
  // Paths probed now, over all rails (0 when no policy names a probe-sid or probing is off).
  size_t probed_paths() const { return probed_.size(); }

  // Human-readable summary and a JSON object (final statistics, telemetry).
  std::string report() const;
  std::string json() const;

 private:
  struct Probed {
    uint16_t rail = 0;
    uint16_t path_id = 0;
    uint8_t traffic_class = 0;  // config::probe_classes(): the policy's RoCE class
    net::Ipv6Addr source;
    std::vector<net::Ipv6Addr> segments;  // transit SIDs + the remote's probe SID
    std::vector<net::Ipv6Addr> returns;   // reverse transit SIDs + the rail's probe SID
  };
  struct Rail {
    RailPort port;
    std::string name;
    net::MacAddr nexthop_mac;
    policy::Settings settings;  // the rail's fabric VLAN tag and PCP map (running config)
    engine::ProbeMonitor monitor;
  };

  void sync();
  void send_all(uint64_t now_ns);
  void drain_replies(uint64_t now_ns);
  // Paths down on every rail that probes them: what the engine is told.
  std::set<uint16_t> down_everywhere() const;
  // Tells the engine the paths whose verdict changed since engine_down_, and updates it.
  void tell_engine(uint64_t now_ns);

  dataplane::Gateway& gw_;
  EngineRunner& engine_;
  std::vector<Rail> rails_;
  bool named_rails_ = false;  // the configuration has rails/rail: paths() names them
  uint8_t hop_limit_ = 64;
  std::vector<Probed> probed_;
  std::set<uint16_t> engine_down_;  // path ids the engine was told are down by the probes
  uint64_t synced_generation_ = ~uint64_t(0);
  uint64_t next_send_ns_ = 0;
  double ns_per_tsc_ = 1.0;
  std::vector<engine::ProbeTransition> transitions_;
  std::vector<dataplane::ProbeReply> replies_;
  Stats stats_;
};

}  // namespace srv6gw::app
