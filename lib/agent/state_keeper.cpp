// SPDX-License-Identifier: BSD-3-Clause
#include "agent/state_keeper.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string_view>
#include <thread>

namespace srv6gw::agent {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

std::string stale_generation(uint64_t expected, uint64_t running) {
  return "stale generation: expected_generation is " + std::to_string(expected) +
         ", the running generation is " + std::to_string(running);
}

// "params.<field>: <why> (<YANG node>)" for a refusal under /srv6gw:gateway/engine, else the
// refusal as it is (a configuration that did not validate for another reason).
std::string describe_engine_error(const config::ConfigError& e) {
  constexpr std::string_view kEngine = "/srv6gw:gateway/engine/";
  if (e.path.rfind(kEngine, 0) == 0) {
    std::string field = e.path.substr(kEngine.size());
    std::replace(field.begin(), field.end(), '-', '_');
    return "params." + field + ": " + e.message + " (" + e.path + ")";
  }
  return "configuration refused: " + e.message + " (" + e.path + ")";
}

// Paths down whose path id the configuration no longer has are forgotten (the engine forgets
// them too: its path state follows the path id).
std::vector<PathDown> paths_still_configured(const std::vector<PathDown>& down,
                                             const config::GatewayConfig& cfg) {
  std::vector<PathDown> kept;
  for (const PathDown& d : down) {
    bool known = false;
    for (const config::Policy& p : cfg.policies)
      for (const config::SegmentList& sl : p.segment_lists) known |= sl.path_id == d.path_id;
    if (known) kept.push_back(d);
  }
  return kept;
}

Refusal refused(Refusal::Code code, std::string message) {
  return Refusal{code, std::move(message)};
}

}  // namespace

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

void StateKeeper::open_journal(uint64_t generation) {
  // Appending continues the persisted history only when the state directory holds exactly
  // the state this keeper starts from (restore_startup_state read it); otherwise the first
  // change writes a snapshot.
  auto head = read_snapshot_head(state_path_);
  const auto* h = std::get_if<SnapshotHead>(&head);
  if (!h) return;  // no snapshot yet (or an unusable one): the first change writes one
  std::error_code ec;
  counts_.snapshot_bytes = size_t(std::filesystem::file_size(state_path_, ec));
  const std::string jpath = journal_path(state_path_);
  next_sequence_ = h->journal_sequence + 1;
  std::string error;
  uint64_t disk_generation = h->generation;
  std::optional<JournalContents> journal;
  if (std::filesystem::exists(jpath, ec)) {
    journal = read_journal(jpath, h->journal_sequence, /*decode=*/false, error);
    if (!journal || !journal->corrupt.empty()) {
      spdlog::warn("agent: journal {} not usable ({}): the next change writes a snapshot", jpath,
                   journal ? journal->corrupt : error);
      return;
    }
    next_sequence_ = std::max(h->journal_sequence, journal->last_sequence) + 1;
    if (journal->last_sequence > h->journal_sequence) disk_generation = journal->last_generation;
  }
  if (disk_generation != generation) {
    spdlog::info(
        "agent: the state directory is at generation {}, the agent starts at {}: the next "
        "change writes a snapshot",
        disk_generation, generation);
    return;
  }
  if (journal && journal->last_sequence > h->journal_sequence)
    journal_ = JournalWriter::open(jpath, journal->good_bytes, error);
  else
    journal_ = JournalWriter::create(jpath, error);  // none, or only records in the snapshot
  // (the constructor: no other thread yet)
  if (!journal_) {
    spdlog::warn("agent: journal {}: {}: the next change writes a snapshot", jpath, error);
    return;
  }
  needs_snapshot_ = false;
  counts_.journal_bytes = journal_->bytes();
}

void StateKeeper::set_journal_min_bytes(size_t bytes) {
  std::lock_guard apply_lock(apply_mutex_);
  journal_min_bytes_ = bytes;
}

StateKeeper::PersistCounts StateKeeper::persist_counts() {
  std::lock_guard apply_lock(apply_mutex_);
  return counts_;
}

std::string StateKeeper::write_snapshot(const config::GatewayConfig& cfg, uint64_t generation,
                                        const StateExtras& extras) {
  const auto t0 = Clock::now();
  size_t bytes = 0;
  {
    std::lock_guard snapshot_lock(snapshot_mutex_);
    if (auto why =
            write_state_file(state_path_, cfg, generation, extras, next_sequence_ - 1, &bytes);
        !why.empty())
      return why;
    ++snapshot_epoch_;  // a background snapshot older than this one is not renamed over it
  }
  ++counts_.snapshots;
  counts_.snapshot_bytes = bytes;
  // The snapshot is durable: every journal record so far is in it (its journal-sequence), so a
  // crash before the new journal replaces the old one reads the old records as already
  // included.
  std::string error;
  set_journal(JournalWriter::create(journal_path(state_path_), error));
  needs_snapshot_ = !journal_;
  counts_.journal_bytes = journal_ ? journal_->bytes() : 0;
  if (!journal_)
    spdlog::error("agent: cannot start a new journal: {}; the next change writes a snapshot",
                  error);
  spdlog::info("agent: snapshot of generation {} written ({:.1f} MB, {:.1f} ms), journal restarted",
               generation, double(bytes) / 1e6, ms_since(t0));
  return "";
}

std::string StateKeeper::persist(const Step& step, const StateExtras& next_extras, bool group) {
  if (needs_snapshot_ || !journal_)
    return write_snapshot(*step.config, step.generation, next_extras);
  const bool paths_changed = !(next_extras.paths_down == extras_.paths_down);
  std::string record;
  encode_record(next_sequence_, step.generation, step.config_changes ? step.changes : nullptr,
                step.engine_changed ? &step.config->engine : nullptr,
                paths_changed ? &next_extras.paths_down : nullptr, record);
  if (auto why = group ? journal_->write(record) : journal_->append(record); !why.empty()) {
    if (journal_->broken()) {
      // The record may be in the file: its sequence is used up, and the next change writes a
      // snapshot (which includes every sequence so far) and a new journal.
      ++next_sequence_;
      set_journal(nullptr);
      needs_snapshot_ = true;
    }
    return why;
  }
  ++next_sequence_;
  ++counts_.records;
  counts_.journal_bytes = journal_->bytes();
  if (!group) {
    std::lock_guard group_lock(group_mutex_);
    ++counts_.syncs;
  }
  return "";
}

void StateKeeper::set_journal(std::shared_ptr<JournalWriter> journal) {
  std::lock_guard group_lock(group_mutex_);
  journal_ = std::move(journal);
}

void StateKeeper::mark_durable(uint64_t ticket) {
  durable_ticket_ = std::max(durable_ticket_, ticket);
  while (!pending_.empty() && pending_.front().ticket <= durable_ticket_) {
    PendingChange& p = pending_.front();
    if (p.event) {
      bus_.set_generation(p.generation);
      p.event->generation = p.generation;
      bus_.publish(std::move(*p.event));
    }
    pending_.pop_front();
  }
}

std::string StateKeeper::wait_durable(uint64_t ticket, bool apply_locked) {
  std::unique_lock group_lock(group_mutex_);
  for (;;) {
    if (durable_ticket_ >= ticket) return "";
    if (failed_ticket_ >= ticket) return failure_;
    if (!sync_failure_.empty()) {
      // Whoever holds the apply lock rolls back; nothing is synced until then.
      group_lock.unlock();
      if (apply_locked) {
        roll_back_pending();
      } else {
        std::lock_guard apply_lock(apply_mutex_);
        roll_back_pending();
      }
      group_lock.lock();
      continue;
    }
    if (syncing_) {
      group_cv_.wait_for(group_lock, std::chrono::milliseconds(100));
      continue;
    }
    // This thread syncs every record written so far; the others wait for it.
    syncing_ = true;
    const std::shared_ptr<JournalWriter> journal = journal_;
    const uint64_t target = written_ticket_;
    group_lock.unlock();
    const std::string why = journal ? journal->sync() : "the journal is closed";
    group_lock.lock();
    syncing_ = false;
    // A journal replaced meanwhile (a compaction carried the records to a new, synced file,
    // or a rollback dropped them): its sync does not count.
    if (journal == journal_) {
      if (why.empty()) {
        ++counts_.syncs;
        mark_durable(target);
      } else {
        sync_failure_ = why;
      }
    }
    group_cv_.notify_all();
  }
}

std::string StateKeeper::settle() {
  uint64_t target = 0;
  {
    std::lock_guard group_lock(group_mutex_);
    target = written_ticket_;
    if (target <= std::max(durable_ticket_, failed_ticket_) && sync_failure_.empty()) return "";
  }
  return wait_durable(target, /*apply_locked=*/true);
}

void StateKeeper::roll_back_pending() {
  std::deque<PendingChange> undo;
  std::string why;
  {
    std::lock_guard group_lock(group_mutex_);
    if (sync_failure_.empty()) return;
    why = sync_failure_;
    undo.swap(pending_);
  }
  if (!undo.empty()) {
    spdlog::error(
        "agent: cannot persist generations {}..{}: {}; rolling back the {} changes not yet "
        "durable",
        undo.front().generation, undo.back().generation, why, undo.size());
    // The journal goes back to where the first of them starts; when it cannot, the next
    // change writes a snapshot (sequences up to here are used up) and a new journal.
    if (journal_ && !journal_->broken() &&
        journal_->cut_back(undo.front().journal_offset).empty()) {
      next_sequence_ = undo.front().sequence;
      counts_.journal_bytes = journal_->bytes();
    } else {
      set_journal(nullptr);
      needs_snapshot_ = true;
    }
    counts_.records -= std::min<uint64_t>(counts_.records, undo.size());
    // The state before the first of them: O(state), on this rare path only.
    auto restored = copy_state(*current_mutable_);
    for (auto it = undo.rbegin(); it != undo.rend(); ++it) apply_changeset(it->inverse, *restored);
    restored->generation = undo.front().generation - 1;
    extras_ = undo.front().extras_before;
    if (auto e = sink_.apply(restored->config))
      spdlog::critical(
          "agent: ROLLBACK FAILED, the data plane runs an unpersisted configuration: {}: {}",
          e->path, e->message);
    index_ = config::ConfigIndex(restored->config);
    spare_.reset();
    spare_behind_ = Changeset{};
    current_mutable_ = restored;
    publish(std::move(restored));
  }
  {
    std::lock_guard group_lock(group_mutex_);
    if (!undo.empty()) failed_ticket_ = std::max(failed_ticket_, undo.back().ticket);
    failure_ = why;
    sync_failure_.clear();
  }
  group_cv_.notify_all();
}

struct StateKeeper::Compaction {
  std::shared_ptr<const AgentState> state;  // published, immutable
  StateExtras extras;
  uint64_t sequence = 0;  // the last record the state includes
  uint64_t ticket = 0;    // of that record when it is not durable yet (0: it is)
  uint64_t epoch = 0;     // snapshot_epoch_ when it started
  std::shared_ptr<JournalWriter> journal;
  size_t offset = 0;  // where the records after `sequence` start in `journal`
};

void StateKeeper::maybe_compact_in_background() {
  if (state_path_.empty() || !journal_ || needs_snapshot_ || compacting_ || stopping_) return;
  if (journal_->bytes() <= std::max(journal_min_bytes_, counts_.snapshot_bytes)) return;
  if (compactor_.joinable()) compactor_.join();  // the previous one is done (compacting_)
  Compaction c;
  c.state = current_mutable_;
  c.extras = extras_;
  c.sequence = next_sequence_ - 1;
  c.journal = journal_;
  c.offset = journal_->bytes();
  {
    std::lock_guard group_lock(group_mutex_);
    if (written_ticket_ > durable_ticket_) c.ticket = written_ticket_;
  }
  {
    std::lock_guard snapshot_lock(snapshot_mutex_);
    c.epoch = snapshot_epoch_;
  }
  compacting_ = true;
  compaction_view_ = c.state.get();
  compactor_ = std::thread([this, c = std::move(c)]() mutable { run_compaction(std::move(c)); });
}

void StateKeeper::run_compaction(Compaction c) {
  const auto t0 = Clock::now();
  const uint64_t generation = c.state->generation;
  // 1. The state must not include a change that could still be rolled back.
  std::string why;
  if (c.ticket && !wait_durable(c.ticket, /*apply_locked=*/false).empty())
    why = "the changes it would include were rolled back";
  // 2. The snapshot (the old journal still holds every record: a crash now restores the new
  //    snapshot plus the records after its journal-sequence).
  size_t bytes = 0;
  bool written = false;
  if (why.empty()) {
    std::lock_guard snapshot_lock(snapshot_mutex_);
    if (snapshot_epoch_ != c.epoch) {
      why = "a newer snapshot was written meanwhile";
    } else {
      why =
          write_state_file(state_path_, c.state->config, generation, c.extras, c.sequence, &bytes);
      if (why.empty()) {
        ++snapshot_epoch_;
        written = true;
      }
    }
  }
  const double snapshot_ms = ms_since(t0);
  c.state.reset();
  // 3. A new journal with the records written meanwhile, renamed over the old one (a crash
  //    before the rename reads the old journal, after it the new: both fit the snapshot).
  std::lock_guard apply_lock(apply_mutex_);
  size_t carried = 0;
  if (written) {
    ++counts_.snapshots;
    ++counts_.background_snapshots;
    counts_.snapshot_bytes = bytes;
    bool failed = false;
    {
      std::lock_guard group_lock(group_mutex_);
      failed = !sync_failure_.empty();
    }
    if (failed) roll_back_pending();
    if (journal_ == c.journal) {
      std::string error;
      auto tail = journal_->read_from(c.offset, error);
      std::shared_ptr<JournalWriter> fresh;
      if (tail) fresh = JournalWriter::create(journal_path(state_path_), error, *tail);
      if (fresh) {
        carried = tail->size();
        set_journal(fresh);
        std::lock_guard group_lock(group_mutex_);
        mark_durable(written_ticket_);  // carried and synced in the new file
      } else {
        why = "cannot restart the journal (" + error + "); the old one stays in use";
      }
      counts_.journal_bytes = journal_->bytes();
    }
  }
  compacting_ = false;
  compaction_view_ = nullptr;
  group_cv_.notify_all();
  if (!why.empty())
    spdlog::warn("agent: background snapshot of generation {}: {}", generation, why);
  else if (written)
    spdlog::info(
        "agent: background snapshot of generation {} written ({:.1f} MB, {:.1f} ms), journal "
        "restarted with the {} bytes of records written meanwhile ({:.1f} ms in all)",
        generation, double(bytes) / 1e6, snapshot_ms, carried, ms_since(t0));
}

void StateKeeper::wait_background_compaction() {
  {
    std::lock_guard apply_lock(apply_mutex_);
    stopping_ = true;  // none starts meanwhile
  }
  if (compactor_.joinable()) compactor_.join();
  std::lock_guard apply_lock(apply_mutex_);
  stopping_ = false;
}

std::string StateKeeper::compact() {
  wait_background_compaction();
  std::lock_guard apply_lock(apply_mutex_);
  if (state_path_.empty()) return "";
  settle();
  if (!journal_ || !journal_->has_records()) return "";
  return write_snapshot(current_mutable_->config, current_mutable_->generation, extras_);
}

StateKeeper::~StateKeeper() {
  {
    std::lock_guard apply_lock(apply_mutex_);
    stopping_ = true;
  }
  if (compactor_.joinable()) compactor_.join();
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
  StateExtras next_extras = extras_;
  if (auto refusal = step.run(next_extras)) return refusal;
  t.run_ms = ms_since(t_run);

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

std::optional<Refusal> StateKeeper::apply(
    const google::protobuf::RepeatedPtrField<v1::Change>& changes,
    std::optional<uint64_t> expected_generation, bool dry_run, const std::string& origin,
    ApplyResult& result, double parse_ms) {
  const auto t0 = Clock::now();
  // What the log line says once the change is durable (the lock is released before).
  uint64_t ticket = 0;
  ChangeCounts c;
  Batch::Times batch_times;
  StepTimes times;
  double batch_ms = 0, edit_ms = 0;
  uint64_t generation = 0;
  {
    std::unique_lock apply_lock(apply_mutex_);
    if (!dry_run) before_change(/*group=*/true);
    const auto base = snapshot();
    if (expected_generation && *expected_generation != base->generation) {
      const std::string message = stale_generation(*expected_generation, base->generation);
      // Logged like every other refusal: two controllers racing each other must be visible.
      spdlog::warn("agent: refused a batch of {} changes from {}: {}", changes.size(), origin,
                   message);
      return refused(Refusal::Code::failed_precondition, message);
    }
    if (changes.empty())
      return refused(Refusal::Code::invalid_argument, "changes: the batch is empty");

    // Validate.
    Batch batch(*base, index_, changes);
    if (auto e = batch.run()) {
      spdlog::warn("agent: {}refused a batch of {} changes from {}: {}", dry_run ? "dry run " : "",
                   changes.size(), origin, e->message);
      return refused(e->code == BatchCode::not_found ? Refusal::Code::not_found
                                                     : Refusal::Code::invalid_argument,
                     e->message);
    }
    batch_ms = ms_since(t0);
    result.counts = batch.counts();
    if (dry_run) {
      result.generation = base->generation;
      spdlog::info("agent: dry run of {} changes from {} would apply ({:.1f} ms)", changes.size(),
                   origin, batch_ms);
      return std::nullopt;
    }

    const auto t_edit = Clock::now();
    std::shared_ptr<AgentState> next = take_spare(base);
    apply_changeset(batch.changeset(), *next);
    next->generation = base->generation + 1;
    edit_ms = ms_since(t_edit);
    // The data plane edits only the steering entries the batch changed (O(batch), not
    // O(configuration)); the pointers are valid until the batch and `base` go.
    policy::SteeringDelta steering_delta;
    steering_delta.rules.reserve(batch.delta().rules.size());
    for (const config::RuleDelta& d : batch.delta().rules)
      steering_delta.rules.push_back({d.before, d.after, d.after_index});

    Step step;
    step.config = &next->config;
    step.generation = next->generation;
    step.changes = &batch.changeset();
    step.run = [&](StateExtras& extras) -> std::optional<Refusal> {
      if (auto e = sink_.apply_delta(next->config, steering_delta)) {
        const std::string msg = "data plane refused: " + batch.describe(*e);
        spdlog::warn("agent: batch from {} {}", origin, msg);
        return refused(Refusal::Code::invalid_argument, msg);  // `next` is dropped
      }
      extras.paths_down = paths_still_configured(extras.paths_down, next->config);
      return std::nullopt;
    };
    step.undo = [&] { roll_back_data_plane(base->config, steering_delta.inverse()); };
    step.inverse = [&] {
      const config::ConfigDelta& delta = batch.delta();
      Changeset inverse;
      for (const config::PolicyDelta& d : delta.policies)
        inverse.policies.emplace_back(d.before ? d.before->name : d.after->name,
                                      d.before ? std::optional(*d.before) : std::nullopt);
      inverse.rules.reserve(delta.rules.size());
      for (const config::RuleDelta& d : delta.rules)
        inverse.rules.emplace_back(d.before ? d.before->id : d.after->id,
                                   d.before ? std::optional(*d.before) : std::nullopt);
      for (const config::LocalSidDelta& d : delta.local_sids)
        inverse.local_sids.emplace_back(d.before ? d.before->sid : d.after->sid,
                                        d.before ? std::optional(*d.before) : std::nullopt);
      return inverse;
    };
    step.publish = [&] {
      index_.commit(batch.delta());  // before `base` can be edited: delta() points into it
      spare_ = std::move(current_mutable_);
      spare_behind_ = batch.take_changeset();
      current_mutable_ = next;
      publish(std::move(next));
    };
    step.event = Event{};
    step.event->kind = EventKind::config_applied;
    step.event->detail = ConfigAppliedEvent{batch.counts(), origin};
    step.what = "generation " + std::to_string(step.generation);
    step.undoing = "rolling back";
    step.undone = "the change was rolled back";
    if (auto refusal = commit(step, &times, &ticket)) return refusal;
    c = batch.counts();
    batch_times = batch.times();
    generation = step.generation;
  }  // the apply lock, the base state and the batch go before waiting

  const auto t_wait = Clock::now();
  if (ticket) {
    if (auto why = wait_durable(ticket, /*apply_locked=*/false); !why.empty()) {
      spdlog::error("agent: generation {} from {} was not persisted ({}) and was rolled back",
                    generation, origin, why);
      return refused(Refusal::Code::unavailable,
                     "the state could not be persisted (" + why + "); the change was rolled back");
    }
    times.persist_ms += ms_since(t_wait);
  }
  spdlog::info(
      "agent: generation {} from {}: policies +{} -{}, steering +{} -{}, local SIDs +{} -{} "
      "(validate {:.1f} ms, edit {:.1f} ms, data plane {:.1f} ms, persist {:.1f} ms); "
      "validate = convert {:.1f} + delta {:.1f} + check {:.1f} ms; index commit {:.1f} ms; "
      "in the handler {:.1f} ms, after parsing the request in {:.1f} ms",
      generation, origin, c.policies_upserted, c.policies_deleted, c.steering_upserted,
      c.steering_deleted, c.local_sids_upserted, c.local_sids_deleted, batch_ms, edit_ms,
      times.run_ms, times.persist_ms, batch_times.convert_ms, batch_times.delta_ms,
      batch_times.check_ms, times.publish_ms, ms_since(t0), parse_ms);
  result.generation = generation;
  return std::nullopt;
}

std::optional<Refusal> StateKeeper::set_engine_params(const EngineParamsEdit& edit,
                                                      std::optional<uint64_t> expected_generation,
                                                      bool dry_run, const std::string& origin,
                                                      EngineParamsResult& result) {
  std::lock_guard apply_lock(apply_mutex_);
  if (!dry_run) before_change(/*group=*/false);
  const auto base = snapshot();
  if (expected_generation && *expected_generation != base->generation) {
    const std::string message = stale_generation(*expected_generation, base->generation);
    spdlog::warn("agent: refused engine parameters from {}: {}", origin, message);
    return refused(Refusal::Code::failed_precondition, message);
  }
  // Validate.
  engine::Params params = base->config.engine;
  if (auto bad = edit(params); !bad.empty()) {
    spdlog::warn("agent: refused engine parameters from {}: {}", origin, bad);
    return refused(Refusal::Code::invalid_argument, bad);
  }
  config::GatewayConfig candidate = base->config;
  candidate.engine = params;
  if (auto e = config::validate(candidate)) {
    const std::string msg = describe_engine_error(*e);
    spdlog::warn("agent: {}refused engine parameters from {}: {}", dry_run ? "dry run " : "",
                 origin, msg);
    return refused(Refusal::Code::invalid_argument, msg);
  }
  result.params = params;
  result.generation = base->generation;
  result.changed = !(params == base->config.engine);
  if (dry_run || !result.changed) return std::nullopt;

  Step step;
  step.config = &candidate;
  step.generation = base->generation + 1;
  step.engine_changed = true;
  step.run = [&](StateExtras& extras) -> std::optional<Refusal> {
    // Steering is unchanged: an empty delta spares the data plane a walk of every rule.
    if (auto e = sink_.apply_delta(candidate, policy::SteeringDelta{})) {
      const std::string msg = "data plane refused: " + describe_engine_error(*e);
      spdlog::warn("agent: engine parameters from {}: {}", origin, msg);
      return refused(Refusal::Code::invalid_argument, msg);
    }
    extras.engine_params_from_agent = true;
    return std::nullopt;
  };
  step.undo = [&] { roll_back_data_plane(base->config, policy::SteeringDelta{}); };
  step.publish = [&] {
    engine_params_from_agent_.store(true);
    // The new state replaces the whole configuration object, so Apply's spare (an older copy
    // it would bring up to date with policy changes only) and the index (pointers into the
    // replaced object) are rebuilt from it: otherwise the next Apply would edit the spare and
    // silently revert these parameters.
    auto next = make_state(std::move(candidate), step.generation);
    spare_.reset();
    spare_behind_ = Changeset{};
    current_mutable_ = next;
    index_ = config::ConfigIndex(current_mutable_->config);
    publish(std::move(next));
  };
  step.event = Event{};
  step.event->kind = EventKind::config_applied;
  step.event->detail = ConfigAppliedEvent{ChangeCounts{}, origin, true};
  step.what = "generation " + std::to_string(step.generation);
  step.undoing = "rolling back";
  step.undone = "the change was rolled back";
  if (auto refusal = commit(step)) return refusal;
  spdlog::info("agent: generation {} from {}: local SR engine parameters changed", step.generation,
               origin);
  result.generation = step.generation;
  return std::nullopt;
}

std::optional<Refusal> StateKeeper::set_path_state(const PathStateCommand& cmd,
                                                   const PathStateHandler& handler,
                                                   const std::string& origin, PathStateOutcome& out,
                                                   uint64_t& generation) {
  std::lock_guard apply_lock(apply_mutex_);
  before_change(/*group=*/false);
  const auto base = snapshot();
  const std::string what = "policy '" + cmd.policy + "' " +
                           (cmd.segment_list ? "segment-list '" + *cmd.segment_list + "'"
                                             : "path id " + std::to_string(*cmd.path_id));
  Step step;
  step.config = &base->config;
  step.generation = base->generation;
  step.config_changes = false;
  // The engine validates the command (which path) and runs it.
  step.run = [&](StateExtras& extras) -> std::optional<Refusal> {
    out = handler(cmd);
    auto because = [&](const char* otherwise) {
      return what + ": " + (out.message.empty() ? otherwise : out.message);
    };
    switch (out.status) {
      case PathStateOutcome::Status::ok:
        break;
      case PathStateOutcome::Status::not_found:
        return refused(Refusal::Code::not_found, because("no such path"));
      case PathStateOutcome::Status::engine_disabled:
        return refused(Refusal::Code::failed_precondition,
                       because("the local SR engine is disabled"));
      case PathStateOutcome::Status::unavailable:
        return refused(Refusal::Code::unavailable, because("not running"));
    }
    auto& down = extras.paths_down;
    down.erase(std::remove_if(down.begin(), down.end(),
                              [&](const PathDown& d) { return d.path_id == out.path_id; }),
               down.end());
    if (!cmd.up) down.push_back(PathDown{cmd.policy, out.segment_list, out.path_id});
    return std::nullopt;
  };
  step.undo = [&] {
    if (!out.changed) return;
    PathStateCommand undo = cmd;
    undo.up = !cmd.up;
    undo.segment_list.reset();
    undo.path_id = out.path_id;
    if (handler(undo).status != PathStateOutcome::Status::ok)
      spdlog::critical("agent: could not put {} back; the engine runs an unpersisted state", what);
  };
  step.publish = [] {};  // the engine runs it already; only the extras change
  step.what = what + (cmd.up ? " up" : " down");
  step.undoing = "putting it back";
  step.refusal_prefix = what + ": ";
  step.undone = "the path was put back as it was";
  if (auto refusal = commit(step)) return refusal;
  spdlog::info("agent: {} set {} by {}{}", what, cmd.up ? "up" : "down", origin,
               out.changed ? "" : " (no change)");
  generation = snapshot()->generation;
  return std::nullopt;
}

}  // namespace srv6gw::agent
