// SPDX-License-Identifier: BSD-3-Clause
// Persistence of the state applied through the agent, so that a restarted gateway comes back
// with what its controllers pushed, at the same generation.
//
// The state file (the snapshot) is JSON:
//   {"format": "srv6gw-agent-state/2", "generation": 42, "journal-sequence": 7,
//    "written-at": "2024-...Z", "config": {"srv6gw:gateway": {...}}}
// where "config" is config::to_json() of the whole running configuration (a valid instance of
// the YANG module: it can be loaded with `srv6gw --config` on its own). Written to a temporary
// file in the same directory, fsync'ed, renamed over the old one and the directory fsync'ed:
// after a crash the file is either the old or the new state, never a mix. Changes after it are
// in the journal beside it (journal.hpp); "journal-sequence" is the last journal record the
// snapshot includes. Format 1 (no journal-sequence: 0) is read too.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "config/model.hpp"

namespace srv6gw::agent {

// A path the controller took out of service (SetPathState down). Keyed by path id, as in the
// local SR engine; policy and segment list are for the reader of the file.
struct PathDown {
  std::string policy;
  std::string segment_list;
  uint16_t path_id = 0;
  friend bool operator==(const PathDown&, const PathDown&) = default;
};

// What the state file holds beside "config" (optional members; a file without them is a
// file written before they existed and means "none"):
//   "engine-params-from-agent": true   config.engine was set over gRPC (SetEngineParams) and
//                                      wins over the configuration file's engine container;
//   "paths-down": [{"policy": "p", "segment-list": "a", "path-id": 1}, ...]
//                                      paths marked down over gRPC, down again at start;
//   "rails-from-agent": true           a rail was changed over gRPC (Apply upsert_rail): the
//                                      MACs, fabric VLAN and local SIDs of config.rails win
//                                      over the file's for rails of the same name.
struct StateExtras {
  bool engine_params_from_agent = false;
  std::vector<PathDown> paths_down;
  bool rails_from_agent = false;  // last: tests build this aggregate positionally
  friend bool operator==(const StateExtras&, const StateExtras&) = default;
};

struct PersistedState {
  config::GatewayConfig config;
  uint64_t generation = 0;
  StateExtras extras;
  uint64_t journal_sequence = 0;  // the last journal record included
  // How the journal was found (read_state_file).
  size_t journal_records = 0;   // records replayed onto the snapshot
  size_t torn_bytes = 0;        // an unsynced tail dropped (never acknowledged)
  std::string torn;             // what it was, for the log
  std::string journal_corrupt;  // "" or why the records after a point were not used
};

// Returns "" on success, else why it failed (the previous file is then untouched).
// `journal_sequence`: the last journal record the state includes. `bytes_written` (optional)
// receives the file's size.
std::string write_state_file(const std::string& path, const config::GatewayConfig& cfg,
                             uint64_t generation, const StateExtras& extras = {},
                             uint64_t journal_sequence = 0, size_t* bytes_written = nullptr);

// The head of a snapshot, read without its configuration (cheap at any size).
struct SnapshotHead {
  unsigned format = 0;  // 1 or 2
  uint64_t generation = 0;
  uint64_t journal_sequence = 0;
};
std::variant<SnapshotHead, std::string> read_snapshot_head(const std::string& path);

// "" when the state file's directory exists (it is created if missing) and takes files; else
// why not. The agent checks at start rather than at the first Apply.
std::string check_state_directory(const std::string& state_path);

// The persisted state: the snapshot, checked by libyang and config::validate(), with the
// journal's records after it replayed; or why it is unusable. A torn last record is dropped
// (torn_bytes). A journal corrupt before its tail gives the state up to the corruption with
// `journal_corrupt` set when `accept_corrupt_journal`, else an error.
std::variant<PersistedState, std::string> read_state_file(const std::string& path,
                                                          bool accept_corrupt_journal = false);

// What the daemon starts with: the configuration file, with the policies, steering rules and
// local SIDs of the state file when there is a usable one (the agent owns those sections;
// ports, capacities, addresses and actions always come from the configuration file), and its
// engine container when it was set over gRPC.
struct StartupState {
  config::GatewayConfig config;
  uint64_t generation = 0;
  bool restored = false;
  std::string set_aside;  // where an unusable state file was moved, "" if none
  // Restored extras: engine parameters set over gRPC are already in `config.engine`; paths
  // down are those whose path id the restored configuration still has (the daemon marks
  // them down in its engine before traffic starts).
  StateExtras extras;
};

// Call before the Gateway is created (so that traffic only ever sees the restored state).
// Missing file: the configuration file at generation 0. Unreadable, corrupt or no longer
// valid with this configuration file (e.g. capacities lowered): logged as a critical error,
// renamed to <path>.corrupt-<UTC time> (or .rejected-<UTC time> when it parsed but does not
// fit), and the configuration file is used at generation 0. `state_path` "" = no persistence.
// The journal: a torn last record is dropped (the agent cuts it off); a journal corrupt before
// its tail is logged as a critical error and renamed to <journal>.corrupt-<UTC time>, the
// state up to the corruption is restored and written as a new snapshot; a journal that is not
// one (or one without a snapshot) is renamed likewise and not used.
StartupState restore_startup_state(const std::string& state_path,
                                   const config::GatewayConfig& file_config);

}  // namespace srv6gw::agent
