// SPDX-License-Identifier: BSD-3-Clause
// One mutex for the whole bus: events are rare (configuration changes, engine decisions at
// most every ~100 us per policy) and publishing only moves a small struct into each queue.
#include "agent/event_bus.hpp"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>

namespace srv6gw::agent {

const char* to_string(EventKind k) {
  switch (k) {
    case EventKind::subscribed:
      return "subscribed";
    case EventKind::config_applied:
      return "config_applied";
    case EventKind::path_weight:
      return "path_weight";
    case EventKind::path_state:
      return "path_state";
    case EventKind::events_lost:
      return "events_lost";
    case EventKind::pause_storm:
      return "pause_storm";
  }
  return "unknown";
}

struct EventBus::Queue {
  std::deque<Event> events;      // guarded by Core::mutex
  uint64_t lost = 0;             // dropped since the last marker (Core::mutex)
  std::vector<EventKind> kinds;  // empty = all (immutable after subscribe)
  std::condition_variable ready;

  bool wants(EventKind k) const {
    return kinds.empty() || k == EventKind::subscribed || k == EventKind::events_lost ||
           std::find(kinds.begin(), kinds.end(), k) != kinds.end();
  }
};

struct EventBus::Core {
  mutable std::mutex mutex;
  std::vector<std::shared_ptr<Queue>> queues;  // guarded by mutex
  size_t queue_limit = 4096;
  uint64_t next_sequence = 1;  // guarded by mutex
  uint64_t generation = 0;     // guarded by mutex
  bool closed = false;         // guarded by mutex

  // Loss markers are per subscriber, not bus events: they take no sequence number (0), so
  // the sequence numbers a subscriber sees still only increase.
  Event lost_marker(uint64_t lost) {
    Event e;
    e.kind = EventKind::events_lost;
    e.detail = lost;
    fill(e);
    return e;
  }

  void stamp(Event& e) {
    e.sequence = next_sequence++;
    fill(e);
  }

  void fill(Event& e) const {
    if (e.generation == 0) e.generation = generation;
    if (e.time_unix_ns == 0) {
      e.time_unix_ns = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count());
    }
  }
};

EventBus::EventBus(size_t queue_limit) : core_(std::make_shared<Core>()) {
  core_->queue_limit = std::max<size_t>(queue_limit, 1);
}

EventBus::~EventBus() {
  close();
}

uint64_t EventBus::publish(Event event) {
  std::lock_guard lock(core_->mutex);
  if (core_->closed) return 0;
  core_->stamp(event);
  for (const auto& q : core_->queues) {
    if (!q->wants(event.kind)) continue;
    // The loss marker goes where the gap is: after the events queued before the losses,
    // before the first event queued after them.
    if (q->lost != 0 && q->events.size() < core_->queue_limit) {
      q->events.push_back(core_->lost_marker(q->lost));
      q->lost = 0;
    }
    if (q->events.size() >= core_->queue_limit) {
      ++q->lost;
      continue;
    }
    q->events.push_back(event);
    q->ready.notify_one();
  }
  return event.sequence;
}

void EventBus::set_generation(uint64_t generation) {
  std::lock_guard lock(core_->mutex);
  core_->generation = generation;
}

uint64_t EventBus::generation() const {
  std::lock_guard lock(core_->mutex);
  return core_->generation;
}

std::unique_ptr<EventBus::Subscription> EventBus::subscribe(std::vector<EventKind> kinds) {
  auto q = std::make_shared<Queue>();
  q->kinds = std::move(kinds);
  std::lock_guard lock(core_->mutex);
  Event hello;
  hello.kind = EventKind::subscribed;
  core_->stamp(hello);
  q->events.push_back(std::move(hello));
  if (!core_->closed) core_->queues.push_back(q);
  return std::unique_ptr<Subscription>(new Subscription(core_, std::move(q)));
}

void EventBus::close() {
  std::lock_guard lock(core_->mutex);
  core_->closed = true;
  for (const auto& q : core_->queues) q->ready.notify_all();
  core_->queues.clear();
}

size_t EventBus::subscriber_count() const {
  std::lock_guard lock(core_->mutex);
  return core_->queues.size();
}

EventBus::Subscription::Subscription(std::shared_ptr<Core> core, std::shared_ptr<Queue> queue)
    : core_(std::move(core)), queue_(std::move(queue)) {}

EventBus::Subscription::~Subscription() {
  std::lock_guard lock(core_->mutex);
  std::erase(core_->queues, queue_);
}

std::optional<Event> EventBus::Subscription::next(std::chrono::milliseconds timeout) {
  std::unique_lock lock(core_->mutex);
  queue_->ready.wait_for(
      lock, timeout, [&] { return !queue_->events.empty() || queue_->lost != 0 || core_->closed; });
  if (queue_->events.empty()) {
    if (queue_->lost == 0) return std::nullopt;
    // Drained up to the gap and nothing newer fitted yet: report the losses now.
    Event lost = core_->lost_marker(queue_->lost);
    queue_->lost = 0;
    return lost;
  }
  Event e = std::move(queue_->events.front());
  queue_->events.pop_front();
  return e;
}

bool EventBus::Subscription::closed() const {
  std::lock_guard lock(core_->mutex);
  return core_->closed && queue_->events.empty() && queue_->lost == 0;
}

}  // namespace srv6gw::agent
