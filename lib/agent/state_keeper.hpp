// SPDX-License-Identifier: BSD-3-Clause
// The agent's running state and the one way it changes. Every change (a batch of Apply, new
// local SR engine parameters, a path set down or up) goes through the same commit step:
//
//   validate -> run it (data plane, or the engine for a path) -> persist, or undo what ran ->
//   publish the new state -> event
//
// Persisting appends the change (its net change set) to the journal and waits for it to be
// durable: O(change). Group commit: an Apply writes its record and publishes its state under
// the apply lock, then waits for durability without it; the first waiter runs one fdatasync
// for every record written so far while the next Applies write theirs. No Apply is answered
// (nor its event published) before its record is durable; readers (List, Get) may see a state
// whose record is being synced. When a sync fails, every change not yet durable is rolled
// back (state, data plane, journal) and refused. Engine parameters, path states and changes
// persisted by a snapshot first wait for the records before them, then persist on their own.
//
// When the journal outgrows the snapshot (the state file, O(state)) a new snapshot is written
// in the background, from the published (immutable) state once its records are durable, and
// the journal restarts with the records written since (journal.hpp): no change waits for a
// whole snapshot. A crash at any step leaves a snapshot and a journal that give the state
// (the snapshot's journal-sequence says which records it includes). A snapshot is written
// synchronously for the first change when there is none, when the journal could not be
// written, and at a clean stop (compact()).
//
// No gRPC here: the server (agent.cpp) decodes a request, calls one of these and encodes the
// answer; tests/agent/test_state_keeper.cpp drives them directly with a fake sink.
//
// Files: state_keeper.cpp (the commit step, the published state), state_keeper_changes.cpp
// (Apply, SetEngineParams, SetPathState), state_keeper_durability.cpp (journal records,
// snapshots, group commit, the state directory at start), state_keeper_compaction.cpp
// (background compaction, the snapshot of a clean stop).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

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

  // Waits for a background compaction, then writes a snapshot of the running state and
  // restarts the journal, when the journal has records (Agent::stop: a cleanly stopped
  // gateway leaves one compact state file). No background compaction starts afterwards.
  // "" or why not.
  std::string compact();
  // Returns once no background compaction runs (tests: the files are then not being
  // renamed under a reader).
  void wait_background_compaction();
  ~StateKeeper();

  // A new snapshot is written when the journal passes max(this, the snapshot's size)
  // (default 16 MiB).
  void set_journal_min_bytes(size_t bytes);

  struct PersistCounts {
    uint64_t records = 0;    // journal records appended
    uint64_t syncs = 0;      // fdatasyncs that made records durable (group commit: <= records)
    uint64_t snapshots = 0;  // snapshots written (in the background or not)
    uint64_t background_snapshots = 0;
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
    // Makes the change the published state (after it is persisted, or written to the journal
    // for a group commit).
    std::function<void()> publish;
    // The change set that undoes the change (Apply; unset: the change is persisted before it
    // is published, without group commit).
    std::function<Changeset()> inverse;
    std::optional<Event> event;  // published last, stamped with `generation`
    std::string what;            // "generation 4", "policy 'p' path id 3 down" (log)
    std::string undoing;         // "rolling back" (log)
    std::string refusal_prefix;  // before the refusal when persisting fails
    std::string undone;          // "the change was rolled back" (refusal)
  };
  struct StepTimes {
    double run_ms = 0, persist_ms = 0, publish_ms = 0;
    double run_cpu_ms = 0;  // this thread's CPU time during run() (thread_cpu_ms)
  };
  // The commit step. Called under apply_mutex_. A group commit (step.inverse set, a journal
  // open) returns with the record written and the state published: `ticket` is what to pass
  // to wait_durable() once apply_mutex_ is released (0: persisted already, or not at all).
  std::optional<Refusal> commit(Step& step, StepTimes* times = nullptr, uint64_t* ticket = nullptr);
  // Group commit. Returns once the record of `ticket` is durable ("") or rolled back (why).
  // `apply_locked`: the caller holds apply_mutex_.
  std::string wait_durable(uint64_t ticket, bool apply_locked);
  // Under apply_mutex_: every record written so far made durable, or rolled back.
  std::string settle();
  // Under apply_mutex_: after a failed sync, undoes every change not yet durable.
  void roll_back_pending();
  // Under group_mutex_: records up to `ticket` are durable; their events go out in order.
  void mark_durable(uint64_t ticket);
  // Replaces the journal (under apply_mutex_).
  void set_journal(std::shared_ptr<JournalWriter> journal);
  // Starts a background compaction when the journal passed its bound (under apply_mutex_).
  void maybe_compact_in_background();
  struct Compaction;
  void run_compaction(Compaction c);
  // Persists a step (journal record, or snapshot); "" or why not. Under apply_mutex_.
  // `group`: the record is written, not synced (the caller waits with wait_durable()).
  std::string persist(const Step& step, const StateExtras& next_extras, bool group);
  // Under apply_mutex_, before a change: rolls back after a failed sync; unless the change
  // can be group-committed, waits for every record written so far.
  void before_change(bool group);
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
  // journal_ is replaced under apply_mutex_ and group_mutex_, read under either.
  std::shared_ptr<JournalWriter> journal_;
  bool needs_snapshot_ = true;
  uint64_t next_sequence_ = 1;
  size_t journal_min_bytes_ = size_t(16) << 20;
  PersistCounts counts_;  // under apply_mutex_, but `syncs` under group_mutex_

  // Group commit: changes written to the journal, published, not yet durable.
  struct PendingChange {
    uint64_t ticket = 0;  // in write order, never reused
    uint64_t sequence = 0;
    uint64_t generation = 0;
    size_t journal_offset = 0;  // where its record starts
    Changeset inverse;          // turns the state after it into the one before
    StateExtras extras_before;
    std::optional<Event> event;  // published once durable
  };
  std::mutex group_mutex_;  // after apply_mutex_ when both are taken
  std::condition_variable group_cv_;
  // Under group_mutex_ (next_ticket_: apply_mutex_).
  std::deque<PendingChange> pending_;
  uint64_t next_ticket_ = 1;
  uint64_t written_ticket_ = 0, durable_ticket_ = 0, failed_ticket_ = 0;
  std::string failure_;       // why the changes up to failed_ticket_ were rolled back
  std::string sync_failure_;  // a sync failed: roll back before syncing again
  bool syncing_ = false;

  // Background compaction. Under apply_mutex_ but snapshot_epoch_ (snapshot_mutex_, which
  // serialises every snapshot write, taken after apply_mutex_ when both are).
  std::mutex snapshot_mutex_;
  uint64_t snapshot_epoch_ = 0;  // snapshots written: a background one older than the
                                 // latest is not renamed over it
  std::thread compactor_;
  bool compacting_ = false;
  bool stopping_ = false;
  const AgentState* compaction_view_ = nullptr;  // the state being written (take_spare)
};

}  // namespace srv6gw::agent
