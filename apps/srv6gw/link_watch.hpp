// SPDX-License-Identifier: BSD-3-Clause
// Control-thread watch over lossless forwarding and the fabric link (docs/design/lossless.md):
// reports each pause-storm watchdog firing the workers counted, and, when link propagation is
// on (bump in the wire), sets the host port's link down while the fabric link is down and up
// again when it returns, so that the host's RDMA NIC (or its bond) fails over instead of
// sending into a gateway that cannot forward. Main lcore only; never touches the workers.
#pragma once

#include <cstdint>

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
  bool fabric_up_ = true;
  bool host_forced_down_ = false;
  uint64_t storms_seen_ = 0;
  uint64_t downs_ = 0, ups_ = 0;
};

}  // namespace srv6gw::app
