// SPDX-License-Identifier: BSD-3-Clause
// The local SR engine in the daemon: on the main lcore, about every interval, drains the
// data plane's feedback ring, attributes the events to our paths, runs the algorithm and
// publishes the factors of the policies it changed (Gateway::set_path_factors). Decisions
// are logged and counted; the final statistics include them. Every call is made with the
// App's control_mutex held (the agent thread applies configurations under it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/event_bus.hpp"
#include "config/model.hpp"
#include "dataplane/control/gateway.hpp"
#include "engine/attribution.hpp"
#include "engine/engine.hpp"

namespace srv6gw::app {

class EngineRunner {
 public:
  EngineRunner(dataplane::Gateway& gw, const engine::Params& params);

  // One pass: resynchronises with the running configuration when it changed, drains the
  // ring, feeds the engine, closes the intervals that ended and publishes.
  void poll(uint64_t now_ns);

  // How often poll() wants to run (the engine interval).
  // Disabled: 10 ms (the ring is still drained, its events counted).
  uint32_t tick_interval_us() const {
    return engine_.params().enabled ? engine_.params().interval_us : 10000;
  }

  // Controller (gRPC SetPathState): marks a path down or up, published at once. False when
  // the path id is unknown; `changed` (optional) tells whether a factor moved.
  bool set_admin(uint16_t path_id, bool up, uint64_t now_ns, bool* changed = nullptr);

  // Path health probes (ProbeRunner): the probes say the path is broken (down) or works
  // again (up); published at once, streamed as path_state events with reason probe-down /
  // probe-up. False when the path id is unknown.
  bool set_probe_state(uint16_t path_id, bool up, uint64_t now_ns);
  // A pause storm made the fabric port unusable, or it ended (engine::Engine::set_fabric_usable:
  // the engine holds its factors and probe verdicts meanwhile). Publishes what it decides.
  void set_fabric_usable(bool usable, uint64_t now_ns);

  // Where decisions are streamed as path_weight/path_state events (the gRPC agent's bus);
  // null (--no-agent, or the agent stopping) = logged and counted only. The bus never waits
  // for a watcher: a slow one loses events, the engine loop never stalls.
  void set_event_bus(agent::EventBus* bus) { events_bus_ = bus; }

  struct Stats {
    uint64_t polls = 0;
    uint64_t events = 0;     // drained from the ring
    uint64_t publishes = 0;  // policies republished
    uint64_t publish_errors = 0;
    uint64_t reactions = 0;         // polls where new CNP evidence led to a publication
    uint64_t last_reaction_ns = 0;  // worker saw the CNP -> new weights in force
    uint64_t max_reaction_ns = 0;
    uint64_t last_engine_ns = 0;  // engine time of that poll (drain .. publish)
    uint64_t max_engine_ns = 0;
    uint64_t busy_ns = 0;           // total time spent in poll()
    uint64_t events_published = 0;  // decisions streamed to the event bus
  };
  const Stats& stats() const { return stats_; }
  const engine::Engine& engine() const { return engine_; }
  const engine::AttributionCounters& attribution() const { return attributor_.counters(); }

  // Human-readable summary and a JSON object (final statistics).
  std::string report() const;
  std::string json() const;

 private:
  void sync_policies();
  void publish(const std::vector<engine::Decision>& decisions, size_t from);

  dataplane::Gateway& gw_;
  engine::Engine engine_;
  engine::Attributor attributor_;
  uint64_t synced_generation_ = 0;
  std::vector<engine::Decision> decisions_;
  std::vector<dataplane::FeedbackEvent> events_;
  agent::EventBus* events_bus_ = nullptr;  // main lcore, under control_mutex
  Stats stats_;
};

}  // namespace srv6gw::app
