// SPDX-License-Identifier: BSD-3-Clause
// StateKeeper's persistence: where the state directory stands at start, a change written as a
// journal record or a snapshot, and group commit (one fdatasync for every record written so
// far, changes answered once durable, every change not durable rolled back when a sync
// fails). The locking rules are in state_keeper.hpp.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include "agent/state_keeper.hpp"
#include "agent/state_keeper_detail.hpp"

namespace srv6gw::agent {

using namespace keeper_detail;

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
    if (journal->format != 2 && journal->last_sequence > h->journal_sequence) {
      // Records of format 1 (no durable sequence) are not followed by format-2 ones.
      spdlog::info(
          "agent: journal {} is of format 1: the next change writes a snapshot and a journal of "
          "format 2",
          jpath);
      return;
    }
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
    journal_ = JournalWriter::open(jpath, journal->good_bytes, journal->last_sequence, error);
  else  // none, or only records in the snapshot
    journal_ = JournalWriter::create(jpath, next_sequence_ - 1, error);
  // (the constructor: no other thread yet)
  if (!journal_) {
    spdlog::warn("agent: journal {}: {}: the next change writes a snapshot", jpath, error);
    return;
  }
  needs_snapshot_ = false;
  counts_.journal_bytes = journal_->bytes();
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
  set_journal(JournalWriter::create(journal_path(state_path_), next_sequence_ - 1, error));
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
  encode_record(next_sequence_, journal_->durable_sequence(), step.generation,
                step.config_changes ? step.changes : nullptr,
                step.engine_changed ? &step.config->engine : nullptr,
                paths_changed ? &next_extras.paths_down : nullptr, record);
  if (auto why = group ? journal_->write(record, next_sequence_)
                       : journal_->append(record, next_sequence_);
      !why.empty()) {
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
        journal_->cut_back(undo.front().journal_offset, undo.front().sequence - 1).empty()) {
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

}  // namespace srv6gw::agent
