// SPDX-License-Identifier: BSD-3-Clause
// StateKeeper's commit step (state_keeper.hpp): construction, the published state and the
// spare the next Apply edits, and commit() that runs, persists and publishes one change.
// The callers are in state_keeper_changes.cpp, persistence and group commit in
// state_keeper_durability.cpp, background compaction in state_keeper_compaction.cpp.
#include "agent/state_keeper.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include "agent/state_keeper_detail.hpp"

namespace srv6gw::agent {

using namespace keeper_detail;

StateKeeper::StateKeeper(std::string state_path, StateSink& sink, EventBus& bus,
                         const config::GatewayConfig& running, uint64_t generation,
                         StateExtras extras)
    : state_path_(std::move(state_path)), sink_(sink), bus_(bus), extras_(std::move(extras)) {
  current_mutable_ = make_state(running, generation);
  current_ = current_mutable_;
  index_ = config::ConfigIndex(current_->config);
  engine_params_from_agent_.store(extras_.engine_params_from_agent);
  // The spare state the first Apply edits (afterwards the previous state serves): copied now,
  // at start, rather than during the first Apply.
  spare_ = copy_state(*current_);
  bus_.set_generation(generation);
  if (!state_path_.empty()) open_journal(generation);
}

void StateKeeper::set_journal_min_bytes(size_t bytes) {
  std::lock_guard apply_lock(apply_mutex_);
  journal_min_bytes_ = bytes;
}

StateKeeper::PersistCounts StateKeeper::persist_counts() {
  std::lock_guard apply_lock(apply_mutex_);
  return counts_;
}

std::shared_ptr<const AgentState> StateKeeper::snapshot() const {
  std::lock_guard lock(state_mutex_);
  return current_;
}

void StateKeeper::publish(std::shared_ptr<const AgentState> next) {
  std::lock_guard lock(state_mutex_);
  current_ = std::move(next);
}

// A state equal to `base` that nobody reads, to edit into the next one: the spare brought up
// to date (O(last batch)) once its last readers are gone, else a copy (O(size)).
std::shared_ptr<AgentState> StateKeeper::take_spare(const std::shared_ptr<const AgentState>& base) {
  if (spare_) {
    // Readers hold a state for one call (a List page, a Get): wait for them a little.
    // The state a background snapshot is being written from is held for the whole snapshot:
    // no use waiting.
    for (int i = 0; i < 2000 && spare_.use_count() > 1 && spare_.get() != compaction_view_; ++i)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    if (spare_.use_count() == 1) {
      auto s = std::move(spare_);
      apply_changeset(spare_behind_, *s);
      spare_behind_ = Changeset{};
      s->generation = base->generation;
      return s;
    }
    spdlog::info("agent: the previous state is still being read; copying the running one");
    spare_.reset();
  }
  return copy_state(*base);
}

void StateKeeper::roll_back_data_plane(const config::GatewayConfig& previous,
                                       const policy::SteeringDelta& undo) {
  if (auto e = sink_.apply_delta(previous, undo))
    spdlog::critical(
        "agent: ROLLBACK FAILED, the data plane runs an unpersisted configuration: {}: {}", e->path,
        e->message);
}

void StateKeeper::before_change(bool group) {
  if (state_path_.empty()) return;
  bool failed = false;
  {
    std::lock_guard group_lock(group_mutex_);
    failed = !sync_failure_.empty();
  }
  if (failed) roll_back_pending();
  if (!group || !journal_ || needs_snapshot_) settle();
}

std::optional<Refusal> StateKeeper::commit(Step& step, StepTimes* times, uint64_t* ticket) {
  StepTimes t;
  if (ticket) *ticket = 0;
  const auto t_run = Clock::now();
  const double cpu_run = thread_cpu_ms();
  StateExtras next_extras = extras_;
  if (auto refusal = step.run(next_extras)) return refusal;
  t.run_ms = ms_since(t_run);
  t.run_cpu_ms = thread_cpu_ms() - cpu_run;

  const auto t_persist = Clock::now();
  const bool persisting =
      !state_path_.empty() && (step.config_changes || !(next_extras == extras_));
  const bool group = persisting && ticket && step.inverse && journal_ && !needs_snapshot_;
  std::optional<PendingChange> pending;
  if (group) {
    pending.emplace();
    pending->sequence = next_sequence_;
    pending->generation = step.generation;
    pending->journal_offset = journal_->bytes();
    pending->extras_before = extras_;
  }
  if (persisting) {
    if (const std::string why = persist(step, next_extras, group); !why.empty()) {
      spdlog::error("agent: cannot persist {}: {}; {}", step.what, why, step.undoing);
      step.undo();
      return refused(
          Refusal::Code::unavailable,
          step.refusal_prefix + "the state could not be persisted (" + why + "); " + step.undone);
    }
  }
  if (pending) pending->inverse = step.inverse();  // before publish() lets the base be edited
  t.persist_ms = ms_since(t_persist);

  const auto t_publish = Clock::now();
  extras_ = std::move(next_extras);
  step.publish();
  t.publish_ms = ms_since(t_publish);
  if (pending) {
    // Answered, and its event published, once durable (wait_durable()).
    pending->ticket = next_ticket_++;
    pending->event = std::move(step.event);
    *ticket = pending->ticket;
    std::lock_guard group_lock(group_mutex_);
    written_ticket_ = pending->ticket;
    pending_.push_back(std::move(*pending));
  } else if (step.event) {
    bus_.set_generation(step.generation);
    step.event->generation = step.generation;
    bus_.publish(std::move(*step.event));
  }
  maybe_compact_in_background();
  if (times) *times = t;
  return std::nullopt;
}

}  // namespace srv6gw::agent
