// SPDX-License-Identifier: BSD-3-Clause
#include "link_watch.hpp"

#include <rte_ethdev.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <mutex>
#include <vector>

#include "agent/event_bus.hpp"
#include "dataplane/control/gateway.hpp"
#include "engine_runner.hpp"

namespace srv6gw::app {

namespace {

struct StormCounts {
  uint64_t started[2] = {}, ended[2] = {}, dropped = 0;
};

// Sums over the workers of one rail.
StormCounts storm_counts(const dataplane::Gateway& gw, unsigned rail) {
  StormCounts s;
  for (unsigned i = 0; i < gw.worker_count(); ++i) {
    if (gw.worker_rail(i) != rail) continue;
    const dataplane::WorkerCounters& c = gw.worker_counters(i);
    s.started[0] += c.storms_to_fabric;
    s.ended[0] += c.storm_ends_to_fabric;
    s.started[1] += c.storms_to_host;
    s.ended[1] += c.storm_ends_to_host;
    s.dropped += c.drops[size_t(dataplane::DropReason::pause_storm)];
  }
  return s;
}

uint64_t steady_ns() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

}  // namespace

LinkWatch::LinkWatch(App& app, bool propagate_link) : app_(app), propagate_(propagate_link) {
  storms_.resize(app_.rails.size());
  for (unsigned r = 0; r < storms_.size(); ++r) {
    const StormCounts s = storm_counts(*app_.gateway, r);
    for (int d = 0; d < 2; ++d) {
      storms_[r][d].started = s.started[d];
      storms_[r][d].ended = s.ended[d];
    }
  }
  links_.resize(app_.rails.size());
  if (propagate_)
    for (const RailSetup& rail : app_.rails)
      spdlog::info("link propagation on: {} link down sets {} link down", rail.fabric->name,
                   rail.host->name);
}

// A storm lasts on an egress while some worker's watchdog dropped there and that worker's
// queue has taken no frame since (started - ended > 0 over the workers). One that started
// and ended between two polls is reported as both.
void LinkWatch::watch_storms() {
  for (unsigned r = 0; r < storms_.size(); ++r) watch_storms_of_rail(r);
}

void LinkWatch::watch_storms_of_rail(unsigned rail) {
  const StormCounts s = storm_counts(*app_.gateway, rail);
  for (int d = 0; d < 2; ++d) {
    StormWatch& w = storms_[rail][d];
    const bool started = s.started[d] != w.started;
    const bool ended = s.ended[d] != w.ended;
    if (!started && !ended) continue;
    w.started = s.started[d];
    w.ended = s.ended[d];
    const bool active = w.started > w.ended;
    const PortSetup& port = d == 0 ? *app_.rails[rail].fabric : *app_.rails[rail].host;
    // Edges: a start when one began (even if it also ended since), an end when none lasts.
    std::vector<bool> edges;
    if (started && !w.active) edges.push_back(true);
    if (!active && (w.active || started)) edges.push_back(false);
    w.active = active;
    for (const bool up : edges) {
      if (up)
        spdlog::warn(
            "lossless: pause storm on the {} port {}: its egress took nothing past "
            "storm-bound-ms; the port is unusable, held and refused frames are dropped "
            "(drop reason pause_storm) until it takes frames again",
            port.role, port.name);
      else
        spdlog::warn("lossless: pause storm on the {} port {} ended: its egress takes frames",
                     port.role, port.name);
      std::lock_guard lock(app_.control_mutex);
      // The engine's paths are shared by every rail: it holds while any fabric port storms.
      if (d == 0) {
        fabric_storms_active_ += up ? 1 : -1;
        if (app_.engine) app_.engine->set_fabric_usable(fabric_storms_active_ == 0, steady_ns());
      }
      if (app_.event_bus) {
        agent::Event e;
        e.kind = agent::EventKind::pause_storm;
        e.detail = agent::PauseStormEvent{port.role, port.name, up, w.started, s.dropped};
        app_.event_bus->publish(std::move(e));
      }
    }
  }
}

void LinkWatch::poll() {
  watch_storms();
  if (!propagate_) return;
  for (unsigned r = 0; r < links_.size(); ++r) propagate_rail(r);
}

void LinkWatch::propagate_rail(unsigned rail) {
  const PortSetup& fabric = *app_.rails[rail].fabric;
  const PortSetup& host = *app_.rails[rail].host;
  RailLink& l = links_[rail];
  rte_eth_link link{};
  if (rte_eth_link_get_nowait(fabric.port_id, &link) != 0) return;
  const bool up = link.link_status == RTE_ETH_LINK_UP;
  if (up == l.fabric_up) return;
  l.fabric_up = up;
  if (!up && !l.host_forced_down) {
    const int rc = rte_eth_dev_set_link_down(host.port_id);
    ++downs_;
    l.host_forced_down = rc == 0;
    spdlog::warn("link propagation: fabric port {} down -> host port {} set down{}", fabric.name,
                 host.name, rc == 0 ? "" : std::string(" FAILED: ") + rte_strerror(-rc));
  } else if (up && l.host_forced_down) {
    const int rc = rte_eth_dev_set_link_up(host.port_id);
    ++ups_;
    l.host_forced_down = rc != 0;
    spdlog::warn("link propagation: fabric port {} up -> host port {} set up{}", fabric.name,
                 host.name, rc == 0 ? "" : std::string(" FAILED: ") + rte_strerror(-rc));
  }
}

}  // namespace srv6gw::app
