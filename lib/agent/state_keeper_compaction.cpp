// SPDX-License-Identifier: BSD-3-Clause
// StateKeeper's compaction: a snapshot written in the background when the journal outgrows
// the snapshot, the journal restarted with the records written meanwhile; the synchronous
// snapshot of a clean stop (compact()).
#include <spdlog/spdlog.h>

#include <thread>

#include "agent/state_keeper.hpp"
#include "agent/state_keeper_detail.hpp"

namespace srv6gw::agent {

using namespace keeper_detail;

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
      // Under the apply lock: the tail ends with the last record written.
      if (tail)
        fresh = JournalWriter::create(journal_path(state_path_), next_sequence_ - 1, error, *tail);
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

}  // namespace srv6gw::agent
