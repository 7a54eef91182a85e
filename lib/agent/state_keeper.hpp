// SPDX-License-Identifier: BSD-3-Clause
// The agent's running state and the one way it changes. Every change (a batch of Apply, new
// local SR engine parameters, a path set down or up) goes through the same commit step:
//
//   validate -> run it (data plane, or the engine for a path) -> persist, or undo what ran ->
//   publish the new state -> event
//
// Persisting appends the change (its net change set) to the journal and waits for it to be
// durable: O(change). When the journal outgrows the snapshot (the state file, O(state)) a new
// snapshot is written and the journal restarts (journal.hpp); a snapshot is also written for
// the first change when there is none, and when the journal could not be written.
//
// No gRPC here: the server (agent.cpp) decodes a request, calls one of these and encodes the
// answer; tests/agent/test_state_keeper.cpp drives them directly with a fake sink.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "agent/batch.hpp"
#include "agent/event_bus.hpp"
#include "agent/journal.hpp"
#include "agent/persist.hpp"
#include "agent/state_sink.hpp"
#include "config/config_index.hpp"
#include "config/model.hpp"
#include "engine/params.hpp"

namespace srv6gw::agent {

// SetPathState, as the daemon's handler sees it: one path of one policy, named by segment
// list or by path id (exactly one is set).
struct PathStateCommand {
  std::string policy;
  std::optional<std::string> segment_list;
  std::optional<uint16_t> path_id;
  bool up = false;
};

struct PathStateOutcome {
  enum class Status : uint8_t { ok, not_found, engine_disabled, unavailable };
  Status status = Status::unavailable;
  std::string message;  // why, when not ok
  std::string segment_list;
  uint16_t path_id = 0;
  bool changed = false;
  double factor = 1.0;
};

// Runs on a gRPC thread; the daemon's handler serialises with its own control work.
using PathStateHandler = std::function<PathStateOutcome(const PathStateCommand&)>;

// Why a change was refused; the codes are the gRPC ones the server answers with.
struct Refusal {
  enum class Code : uint8_t { invalid_argument, not_found, failed_precondition, unavailable };
  Code code = Code::invalid_argument;
  std::string message;
};

struct ApplyResult {
  ChangeCounts counts;
  uint64_t generation = 0;  // the new one; the running one for a dry run
};

struct EngineParamsResult {
  engine::Params params;  // what runs (or would run, for a dry run)
  bool changed = false;
  uint64_t generation = 0;
};

// Writes the fields a request sets into the running parameters; returns why not ("" = done).
using EngineParamsEdit = std::function<std::string(engine::Params&)>;

class StateKeeper {
 public:
  // `state_path` "" = not persisted. `running` is what `sink` runs now, at `generation`;
  // `extras` what the state file holds beside it. `bus` gets the config_applied events.
  StateKeeper(std::string state_path, StateSink& sink, EventBus& bus,
              const config::GatewayConfig& running, uint64_t generation, StateExtras extras);

  // The published state: one whole generation; never waits for a change in progress.
  std::shared_ptr<const AgentState> snapshot() const;
  bool engine_params_from_agent() const { return engine_params_from_agent_.load(); }

  // A batch of changes (Apply). `origin` names the caller in logs and events; `parse_ms` is
  // what decoding the request took (logged).
  std::optional<Refusal> apply(const google::protobuf::RepeatedPtrField<v1::Change>& changes,
                               std::optional<uint64_t> expected_generation, bool dry_run,
                               const std::string& origin, ApplyResult& result, double parse_ms = 0);

  // Like an Apply of the engine container alone (SetEngineParams): same validation,
  // publication through the sink, persistence and generation, all or nothing.
  std::optional<Refusal> set_engine_params(const EngineParamsEdit& edit,
                                           std::optional<uint64_t> expected_generation,
                                           bool dry_run, const std::string& origin,
                                           EngineParamsResult& result);

  // One path down or up through `handler` (SetPathState). A path down is persisted (down
  // again after a restart), a path up forgotten; the generation does not change.
  std::optional<Refusal> set_path_state(const PathStateCommand& command,
                                        const PathStateHandler& handler, const std::string& origin,
                                        PathStateOutcome& outcome, uint64_t& generation);

  // Writes a snapshot of the running state and restarts the journal, when the journal has
  // records (Agent::stop: a cleanly stopped gateway leaves one compact state file). "" or why
  // not.
  std::string compact();

  // A new snapshot is written when the journal passes max(this, the snapshot's size)
  // (default 16 MiB).
  void set_journal_min_bytes(size_t bytes);

  struct PersistCounts {
    uint64_t records = 0;    // journal records appended
    uint64_t snapshots = 0;  // snapshots written
    size_t journal_bytes = 0;
    size_t snapshot_bytes = 0;
  };
  PersistCounts persist_counts();

 private:
  // One change, validated, as the commit step takes it.
  struct Step {
    // What the state file holds afterwards: `config` at `generation`. `config_changes` false
    // = the file is written only when the extras change.
    const config::GatewayConfig* config = nullptr;
    uint64_t generation = 0;
    bool config_changes = true;
    // What the journal record holds: the net change set (Apply) and whether the engine
    // parameters changed (SetEngineParams); paths down are recorded when the extras change.
    const Changeset* changes = nullptr;
    bool engine_changed = false;
    // Runs the change; may edit the extras the state file will hold. A refusal ends the
    // step with nothing changed.
    std::function<std::optional<Refusal>(StateExtras&)> run;
    // Undoes run() when the state file cannot be written.
    std::function<void()> undo;
    // Makes the change the published state (after it is persisted).
    std::function<void()> publish;
    std::optional<Event> event;  // published last, stamped with `generation`
    std::string what;            // "generation 4", "policy 'p' path id 3 down" (log)
    std::string undoing;         // "rolling back" (log)
    std::string refusal_prefix;  // before the refusal when persisting fails
    std::string undone;          // "the change was rolled back" (refusal)
  };
  struct StepTimes {
    double run_ms = 0, persist_ms = 0, publish_ms = 0;
  };
  // The commit step. Called under apply_mutex_.
  std::optional<Refusal> commit(Step& step, StepTimes* times = nullptr);
  // Persists a step (journal record, or snapshot); "" or why not. Under apply_mutex_.
  std::string persist(const Step& step, const StateExtras& next_extras);
  // A snapshot of this state including every record so far, then an empty journal.
  std::string write_snapshot(const config::GatewayConfig& cfg, uint64_t generation,
                             const StateExtras& extras);
  // Finds where the state directory stands (at construction).
  void open_journal(uint64_t generation);

  void roll_back_data_plane(const config::GatewayConfig& previous,
                            const policy::SteeringDelta& undo);
  void publish(std::shared_ptr<const AgentState> next);
  std::shared_ptr<AgentState> take_spare(const std::shared_ptr<const AgentState>& base);

  const std::string state_path_;
  StateSink& sink_;
  EventBus& bus_;
  // One change at a time (every state-file write holds it). Everything below but current_
  // and engine_params_from_agent_ is read and written only under it.
  std::mutex apply_mutex_;
  mutable std::mutex state_mutex_;
  std::shared_ptr<const AgentState> current_;  // guarded by state_mutex_
  // Relations between the objects of `current_` for incremental validation.
  config::ConfigIndex index_;
  // The state published before `current_` (readers may still hold it) and the changes that
  // turn it into `current_`. The next Apply brings it up to date and edits it into the next
  // state, so that no Apply copies the whole configuration. Null when there is none (start,
  // or after a failed Apply left it half-edited).
  std::shared_ptr<AgentState> spare_;
  Changeset spare_behind_;
  std::shared_ptr<AgentState> current_mutable_;  // == current_, writable for the next swap
  // What the state file holds beside the configuration (paths down, engine parameters set
  // over gRPC); engine_params_from_agent_ mirrors its flag for lock-free readers.
  StateExtras extras_;
  std::atomic<bool> engine_params_from_agent_{false};
  // Persistence (under apply_mutex_). `journal_` null or `needs_snapshot_`: the next change is
  // persisted as a snapshot. `next_sequence_` is above every record of any journal file that
  // may still be read beside the snapshot.
  std::unique_ptr<JournalWriter> journal_;
  bool needs_snapshot_ = true;
  uint64_t next_sequence_ = 1;
  size_t journal_min_bytes_ = size_t(16) << 20;
  PersistCounts counts_;
};

}  // namespace srv6gw::agent
