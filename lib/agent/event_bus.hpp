// SPDX-License-Identifier: BSD-3-Clause
// In-process publish/subscribe of control-plane events (applied configuration changes, path
// weight/state decisions of the local SR engine, ...). Producers publish from any control
// thread; the gRPC agent streams them to WatchEvents clients. No gRPC, no protobuf here, so
// that any control-plane library can publish (never the data path: publish takes a mutex).
//
// A subscriber that does not keep up never slows a producer down: its queue is bounded, the
// events that do not fit are dropped and counted, and the subscriber is told how many it lost
// (an events_lost event) before the next event it does receive.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace srv6gw::agent {

enum class EventKind : uint8_t {
  subscribed,      // first event of every subscription: the generation it starts at
  config_applied,  // a batch of changes is now running
  path_weight,     // the local SR engine changed a path's factor
  path_state,      // a path was taken out of service or put back
  events_lost,     // this subscriber fell behind; detail = number of events dropped
  pause_storm,     // a port's egress took nothing past storm-bound-ms, or takes frames again
};
const char* to_string(EventKind k);

enum class PathState : uint8_t { unspecified, up, degraded, down };

struct ChangeCounts {
  uint32_t policies_upserted = 0, policies_deleted = 0;
  uint32_t steering_upserted = 0, steering_deleted = 0;
  uint32_t local_sids_upserted = 0, local_sids_deleted = 0;
  uint32_t rails_upserted = 0;
  friend bool operator==(const ChangeCounts&, const ChangeCounts&) = default;
};

struct ConfigAppliedEvent {
  ChangeCounts counts;
  std::string origin;          // who applied it (gRPC peer)
  bool engine_params = false;  // the local SR engine's parameters changed (SetEngineParams)
};

struct PathEvent {
  std::string policy;
  std::string segment_list;
  uint16_t path_id = 0;
  double old_factor = 1.0, new_factor = 1.0;
  PathState old_state = PathState::unspecified, new_state = PathState::unspecified;
  double congestion = 0.0;  // the producer's congestion score behind the decision
  std::string reason;
};

// Lossless forwarding (docs/design/lossless.md): the pause-storm watchdog of a port's egress
// fired (active) or that egress takes frames again (not active).
struct PauseStormEvent {
  std::string port;    // "fabric" or "host"
  std::string device;  // DPDK device name
  bool active = false;
  uint64_t storms = 0;   // watchdog firings on this port since start
  uint64_t dropped = 0;  // frames dropped as pause_storm since start (both ports)
};

struct Event {
  EventKind kind = EventKind::config_applied;
  uint64_t sequence = 0;      // set by the bus: increasing per bus (0 on events_lost)
  uint64_t generation = 0;    // set by the bus when 0: configuration generation in force
  uint64_t time_unix_ns = 0;  // set by the bus when 0
  std::variant<std::monostate, ConfigAppliedEvent, PathEvent, uint64_t /*lost*/, PauseStormEvent>
      detail;
};

class EventBus {
  struct Core;
  struct Queue;

 public:
  // `queue_limit`: events buffered per subscriber before it starts losing them.
  explicit EventBus(size_t queue_limit = 4096);
  ~EventBus();  // closes the bus
  EventBus(const EventBus&) = delete;
  EventBus& operator=(const EventBus&) = delete;

  // Any control thread. Never waits for a subscriber. Returns the sequence number given.
  uint64_t publish(Event event);

  // Generation stamped on events published without one (the agent keeps it current).
  void set_generation(uint64_t generation);
  uint64_t generation() const;

  class Subscription {
   public:
    ~Subscription();
    Subscription(const Subscription&) = delete;
    Subscription& operator=(const Subscription&) = delete;
    // The next event, waiting at most `timeout`. nullopt on timeout or once the bus is closed
    // and drained (closed() tells which). Pending losses come first as an events_lost event.
    std::optional<Event> next(std::chrono::milliseconds timeout);
    bool closed() const;

   private:
    friend class EventBus;
    Subscription(std::shared_ptr<Core> core, std::shared_ptr<Queue> queue);
    std::shared_ptr<Core> core_;
    std::shared_ptr<Queue> queue_;
  };

  // Starts with a `subscribed` event. `kinds` empty = every kind; subscribed and events_lost
  // are always delivered.
  std::unique_ptr<Subscription> subscribe(std::vector<EventKind> kinds = {});

  // Wakes every subscriber; they drain what is queued and then see closed(). Publishing after
  // close is a no-op.
  void close();

  size_t subscriber_count() const;

 private:
  std::shared_ptr<Core> core_;
};

}  // namespace srv6gw::agent
