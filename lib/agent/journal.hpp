// SPDX-License-Identifier: BSD-3-Clause
// The agent's journal: an append-only file of the changes applied since the last snapshot (the
// state file), so that persisting a change costs the change, not the configuration.
//
// State directory (format 2), for --agent-state DIR/state.json:
//   DIR/state.json          the snapshot: format "srv6gw-agent-state/2", the whole running
//                           configuration at "generation", including every journal record up to
//                           "journal-sequence" (persist.hpp)
//   DIR/state.json.journal  "srv6gw-agent-journal/2\n", then records
// The persisted state is the snapshot plus the journal's records after its journal-sequence, in
// order. A snapshot of format 1 (no journal) is one with journal-sequence 0.
//
// A record (little-endian):
//   magic "SRJ2" | u32 body length | u64 sequence | u64 durable sequence | u32 CRC-32 of the 24
//   bytes before it | u32 CRC-32 of the body | body
//   body: u64 generation after the record | u8 sections (1 config changes, 2 engine
//   parameters, 4 paths down) | per section present, in that order: u32 length, bytes
//   config changes: srv6gw.v1.ApplyRequest (its changes: the net change set, upserts with
//                   every field, deletes by key); engine parameters: srv6gw.v1.EngineParams
//                   (every field; set over gRPC); paths down: u32 count, then per path u16 path
//                   id, u16 length + policy, u16 length + segment list (the whole new list).
// Sequences are consecutive. The durable sequence is the highest sequence known durable (its
// fdatasync done, or in the file when it was created or opened) when the record was written:
// always below the record's own.
//
// A record is appended with one write() and fdatasync'ed before the change is acknowledged; one
// fdatasync may cover the records of several concurrent changes (group commit), so after a
// crash the records after the last sync may be incomplete, and their pages may have reached
// the disk in any order: a bad record may be followed by good ones. Reading stops at the first
// bad record (a header that fails its CRC over non-zero bytes, or a body that fails its CRC or
// is too short); the durable sequences of the readable records after it (found by their magic
// and header CRC) say what it is:
//   - none of them says the bad record's sequence (or a later one) was durable: an unsynced
//     tail, never acknowledged; it is dropped with everything after it (torn_bytes, logged as
//     info);
//   - one does: a durable record is damaged: corruption, kept aside loudly; the records before
//     it are good, those after it are not used.
// What no record after it marks durable cannot be told from an unsynced tail: damage to the
// records of the very last sync reads as a torn tail. A CRC-valid record out of sequence, or
// one whose body does not decode, is corruption.
//
// Format 1 ("srv6gw-agent-journal/1", magic "SRJ1", no durable sequence, a 24-byte header with
// its CRC over 16 bytes) is still read, with its rules: a bad record that ends the file is a
// torn tail, one followed by more data corruption. The agent does not append to it: the first
// change after a restart on a format-1 journal writes a snapshot and a format-2 journal.
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

inline constexpr std::string_view kJournalFormat = "srv6gw-agent-journal/2";
inline constexpr size_t kJournalRecordHeader = 32;
// Before the durable sequence (read only).
inline constexpr std::string_view kJournalFormat1 = "srv6gw-agent-journal/1";
inline constexpr size_t kJournalRecordHeader1 = 24;

// The journal beside a state file.
std::string journal_path(const std::string& state_path);

struct JournalRecord {
  uint64_t sequence = 0;
  uint64_t durable = 0;                  // the durable sequence when it was written (format 2)
  uint64_t generation = 0;               // the generation once the record is applied
  Changeset changes;                     // net change set of configuration objects (may be empty)
  std::optional<engine::Params> engine;  // engine parameters set over gRPC
  std::optional<std::vector<PathDown>> paths_down;  // the whole list, when it changed
};

// Appends the framed record to `out`. The second form takes the pieces (nullptr = absent)
// without copying a change set.
void encode_record(const JournalRecord& record, std::string& out);
void encode_record(uint64_t sequence, uint64_t durable, uint64_t generation,
                   const Changeset* changes, const engine::Params* engine,
                   const std::vector<PathDown>* paths_down, std::string& out);

// What a journal file holds.
struct JournalContents {
  unsigned format = 2;                 // 1: written before the durable sequence
  std::vector<JournalRecord> records;  // good records, in order (decoded when asked)
  uint64_t last_sequence = 0;          // of the last good record (0: none)
  uint64_t last_generation = 0;        // of the last good record
  size_t good_bytes = 0;               // where the last good record ends (the append point)
  size_t torn_bytes = 0;  // an unsynced tail (an incomplete last record, or a bad record and
                          // the records never marked durable after it), dropped
  std::string torn;       // "" or what the unsynced tail was (format 2: for the log)
  std::string corrupt;    // "" or where and why the journal is corrupt before its tail
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
  // fsync'ed and renamed over it, so that an old journal is replaced whole. `last_sequence`:
  // of the last record in `records`, or the snapshot's journal-sequence when there is none
  // (durable from then on). nullptr + `error` on failure.
  static std::unique_ptr<JournalWriter> create(const std::string& path, uint64_t last_sequence,
                                               std::string& error, std::string_view records = {});
  // The existing journal (format 2) at `path`, appending at `good_bytes` (a torn tail is cut
  // off first), made durable up to there; `last_sequence` that of its last good record.
  static std::unique_ptr<JournalWriter> open(const std::string& path, size_t good_bytes,
                                             uint64_t last_sequence, std::string& error);
  ~JournalWriter();
  JournalWriter(const JournalWriter&) = delete;
  JournalWriter& operator=(const JournalWriter&) = delete;

  // Writes the framed record (of `sequence`, framed with durable_sequence()) and waits until it
  // is durable (write() + sync(); on a sync failure the file is cut back to where it was).
  // `broken()` is true when even that failed (or the file was removed): the journal must then
  // be replaced (a new snapshot and a new journal).
  std::string append(std::string_view framed, uint64_t sequence);
  // Writes the framed record without waiting (cut back on failure).
  std::string write(std::string_view framed, uint64_t sequence);
  // Makes every record written before the call durable (fdatasync); "" or why not.
  std::string sync();
  // Cuts the file back to `bytes`, after the record of `last_sequence` (records written but
  // not durable, being rolled back).
  std::string cut_back(size_t bytes, uint64_t last_sequence);
  // The highest sequence known durable: what the next record carries.
  uint64_t durable_sequence() const { return durable_sequence_.load(); }
  // The bytes from `from` to the end (the records a compaction carries to a new journal).
  std::optional<std::string> read_from(size_t from, std::string& error) const;
  size_t bytes() const { return bytes_.load(); }
  bool has_records() const { return bytes() > kJournalFormat.size() + 1; }
  bool broken() const { return broken_.load(); }

 private:
  JournalWriter(int fd, std::string path, size_t bytes, uint64_t last_sequence)
      : fd_(fd),
        path_(std::move(path)),
        bytes_(bytes),
        written_sequence_(last_sequence),
        durable_sequence_(last_sequence) {}
  int fd_ = -1;
  std::string path_;
  // Written by write()/cut_back() (apply lock), read by sync() on any thread.
  std::atomic<size_t> bytes_{0};
  std::atomic<bool> broken_{false};
  // The last record written whole (written after bytes_ by write()/cut_back()), and the last
  // known durable (by sync(), which reads written_sequence_ before its fdatasync starts).
  std::atomic<uint64_t> written_sequence_{0};
  std::atomic<uint64_t> durable_sequence_{0};
};

}  // namespace srv6gw::agent
