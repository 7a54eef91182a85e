// SPDX-License-Identifier: BSD-3-Clause
#include "link_watch.hpp"

#include <rte_ethdev.h>
#include <spdlog/spdlog.h>

#include "dataplane/control/gateway.hpp"

namespace srv6gw::app {

LinkWatch::LinkWatch(App& app, bool propagate_link) : app_(app), propagate_(propagate_link) {
  for (unsigned i = 0; i < app_.gateway->worker_count(); ++i)
    storms_seen_ += app_.gateway->worker_counters(i).pause_storms;
  if (propagate_)
    spdlog::info("link propagation on: {} link down sets {} link down", app_.fabric.name,
                 app_.host.name);
}

void LinkWatch::poll() {
  uint64_t storms = 0;
  for (unsigned i = 0; i < app_.gateway->worker_count(); ++i)
    storms += app_.gateway->worker_counters(i).pause_storms;
  if (storms != storms_seen_) {
    spdlog::warn(
        "lossless: pause-storm watchdog fired {} time(s): an egress took nothing past "
        "storm-bound-ms; held frames dropped (drop reason pause_storm) until it moves again",
        storms - storms_seen_);
    storms_seen_ = storms;
  }
  if (!propagate_) return;
  rte_eth_link link{};
  if (rte_eth_link_get_nowait(app_.fabric.port_id, &link) != 0) return;
  const bool up = link.link_status == RTE_ETH_LINK_UP;
  if (up == fabric_up_) return;
  fabric_up_ = up;
  if (!up && !host_forced_down_) {
    const int rc = rte_eth_dev_set_link_down(app_.host.port_id);
    ++downs_;
    host_forced_down_ = rc == 0;
    spdlog::warn("link propagation: fabric port {} down -> host port {} set down{}",
                 app_.fabric.name, app_.host.name,
                 rc == 0 ? "" : std::string(" FAILED: ") + rte_strerror(-rc));
  } else if (up && host_forced_down_) {
    const int rc = rte_eth_dev_set_link_up(app_.host.port_id);
    ++ups_;
    host_forced_down_ = rc != 0;
    spdlog::warn("link propagation: fabric port {} up -> host port {} set up{}", app_.fabric.name,
                 app_.host.name, rc == 0 ? "" : std::string(" FAILED: ") + rte_strerror(-rc));
  }
}

}  // namespace srv6gw::app
