// SPDX-License-Identifier: BSD-3-Clause
// Control-thread watch over lossless forwarding and the fabric link (docs/design/lossless.md):
// raises a pause_storm event (WatchEvents) and a log line when a port's egress storm starts
// and when it ends, tells the local SR engine while the fabric port is unusable (the engine
// then holds its factors and probe verdicts: every path leaves by that port, so nothing seen
// meanwhile blames a path), and, when link propagation is
// on (bump in the wire), sets each rail's host port link down while that rail's fabric link is
// down and up again when it returns, so that the host's RDMA NIC (or its bond) fails over instead
// of sending into a gateway that cannot forward. Main lcore only; never touches the workers.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "app.hpp"

namespace srv6gw::app {

class LinkWatch {
 public:
  LinkWatch(App& app, bool propagate_link);
  // Called from the control loop (every ~10 ms).
  void poll();

  uint64_t link_down_propagations() const { return downs_; }
  uint64_t link_up_propagations() const { return ups_; }

 private:
  App& app_;
  const bool propagate_;
  // Link propagation per rail: each rail's fabric link drives its own host port.
  struct RailLink {
    bool fabric_up = true;
    bool host_forced_down = false;
  };
  void propagate_rail(unsigned rail);
  std::vector<RailLink> links_;  // index: rail
  // Per rail and egress (0 = fabric, 1 = host): storms started and ended as last seen (sums
  // over the rail's workers), and whether one lasts.
  struct StormWatch {
    uint64_t started = 0, ended = 0;
    bool active = false;
  };
  void watch_storms();
  void watch_storms_of_rail(unsigned rail);
  std::vector<std::array<StormWatch, 2>> storms_;  // index: rail
  unsigned fabric_storms_active_ = 0;              // rails whose fabric egress is in a storm
  uint64_t downs_ = 0, ups_ = 0;
};

}  // namespace srv6gw::app
