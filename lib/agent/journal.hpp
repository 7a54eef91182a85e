// SPDX-License-Identifier: BSD-3-Clause
// The agent's journal: an append-only file of the changes applied since the last snapshot (the
// state file), so that persisting a change costs the change, not the configuration.
//
// State directory (format 2), for --agent-state DIR/state.json:
//   DIR/state.json          the snapshot: format "srv6gw-agent-state/2", the whole running
//                           configuration at "generation", including every journal record up to
//                           "journal-sequence" (persist.hpp)
//   DIR/state.json.journal  "srv6gw-agent-journal/1\n", then records
// The persisted state is the snapshot plus the journal's records after its journal-sequence, in
// order. A snapshot of format 1 (no journal) is one with journal-sequence 0.
//
// A record (little-endian):
//   magic "SRJ1" | u32 body length | u64 sequence | u32 CRC-32 of the 16 bytes before it
//   | u32 CRC-32 of the body | body
//   body: u64 generation after the record | u8 sections (1 config changes, 2 engine
//   parameters, 4 paths down) | per section present, in that order: u32 length, bytes
//   config changes: srv6gw.v1.ApplyRequest (its changes: the net change set, upserts with
//                   every field, deletes by key); engine parameters: srv6gw.v1.EngineParams
//                   (every field; set over gRPC); paths down: u32 count, then per path u16 path
//                   id, u16 length + policy, u16 length + segment list (the whole new list).
// Sequences are consecutive. A record is appended with one write() and fdatasync'ed before the
// change is acknowledged (one fdatasync may cover the records of several concurrent changes:
// group commit), so only the records after the last sync can be incomplete after a crash: a
// record that runs past the end of the file, or whose body fails its CRC and ends the file, is
// a torn tail (never acknowledged) and dropped. (Unsynced records whose pages reached the disk
// out of order could show as a bad record followed by good ones: that reads as corruption,
// restores every record before it, all acknowledged ones included, and raises a needless
// alarm; no acknowledged change is lost.) A bad record followed by more data, a header that
// fails its CRC over non-zero bytes, or a gap in the sequences is corruption: the records
// before it are good, those after it are not used.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/batch.hpp"
#include "agent/persist.hpp"
#include "config/model.hpp"
#include "engine/params.hpp"

namespace srv6gw::agent {

inline constexpr std::string_view kJournalFormat = "srv6gw-agent-journal/1";
inline constexpr size_t kJournalRecordHeader = 24;

// The journal beside a state file.
std::string journal_path(const std::string& state_path);

struct JournalRecord {
  uint64_t sequence = 0;
  uint64_t generation = 0;               // the generation once the record is applied
  Changeset changes;                     // net change set of configuration objects (may be empty)
  std::optional<engine::Params> engine;  // engine parameters set over gRPC
  std::optional<std::vector<PathDown>> paths_down;  // the whole list, when it changed
};

// Appends the framed record to `out`. The second form takes the pieces (nullptr = absent)
// without copying a change set.
void encode_record(const JournalRecord& record, std::string& out);
void encode_record(uint64_t sequence, uint64_t generation, const Changeset* changes,
                   const engine::Params* engine, const std::vector<PathDown>* paths_down,
                   std::string& out);

// What a journal file holds.
struct JournalContents {
  std::vector<JournalRecord> records;  // good records, in order (decoded when asked)
  uint64_t last_sequence = 0;          // of the last good record (0: none)
  uint64_t last_generation = 0;        // of the last good record
  size_t good_bytes = 0;               // where the last good record ends (the append point)
  size_t torn_bytes = 0;               // an incomplete last record, dropped
  std::string corrupt;                 // "" or where and why the journal is corrupt before its tail
};

// Reads `path`. `decode` false checks framing, CRCs and sequences only (records stays empty).
// Records with a sequence at or below `after` are checked but not returned (they are in the
// snapshot). nullopt + `error` when the file cannot be read or is not a journal.
std::optional<JournalContents> read_journal(const std::string& path, uint64_t after, bool decode,
                                            std::string& error);

// Replays one record onto a state and the extras beside it. "" on success, else why the
// record cannot be applied.
std::string replay_record(const JournalRecord& record, AgentState& state, StateExtras& extras);

// Called by JournalWriter::sync() once `bytes` bytes of `path` are durable (tests: the image a
// crash at that moment would leave). Unset in the daemon; set it before starting a keeper.
using SyncObserver = std::function<void(const std::string& path, size_t bytes)>;
void set_sync_observer(SyncObserver observer);

// The open journal of a running agent. write() and cut_back() are called by one thread at a
// time (the keeper's apply lock); sync() may run on another thread at the same time (group
// commit: one fdatasync covers every record written before it started).
class JournalWriter {
 public:
  // A new journal at `path` holding `records` (framed, possibly none), written beside it,
  // fsync'ed and renamed over it, so that an old journal is replaced whole. nullptr + `error`
  // on failure.
  static std::unique_ptr<JournalWriter> create(const std::string& path, std::string& error,
                                               std::string_view records = {});
  // The existing journal at `path`, appending at `good_bytes` (a torn tail is cut off first).
  static std::unique_ptr<JournalWriter> open(const std::string& path, size_t good_bytes,
                                             std::string& error);
  ~JournalWriter();
  JournalWriter(const JournalWriter&) = delete;
  JournalWriter& operator=(const JournalWriter&) = delete;

  // Writes the framed record and waits until it is durable (write() + sync(); on a sync
  // failure the file is cut back to where it was). `broken()` is true when even that failed
  // (or the file was removed): the journal must then be replaced (a new snapshot and a new
  // journal).
  std::string append(std::string_view framed);
  // Writes the framed record without waiting (cut back on failure).
  std::string write(std::string_view framed);
  // Makes every record written before the call durable (fdatasync); "" or why not.
  std::string sync();
  // Cuts the file back to `bytes` (records written but not durable, being rolled back).
  std::string cut_back(size_t bytes);
  // The bytes from `from` to the end (the records a compaction carries to a new journal).
  std::optional<std::string> read_from(size_t from, std::string& error) const;
  size_t bytes() const { return bytes_.load(); }
  bool has_records() const { return bytes() > kJournalFormat.size() + 1; }
  bool broken() const { return broken_.load(); }

 private:
  JournalWriter(int fd, std::string path, size_t bytes)
      : fd_(fd), path_(std::move(path)), bytes_(bytes) {}
  int fd_ = -1;
  std::string path_;
  // Written by write()/cut_back() (apply lock), read by sync() on any thread.
  std::atomic<size_t> bytes_{0};
  std::atomic<bool> broken_{false};
};

}  // namespace srv6gw::agent
