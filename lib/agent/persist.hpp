// SPDX-License-Identifier: BSD-3-Clause
// Persistence of the state applied through the agent, so that a restarted gateway comes back
// with what its controllers pushed, at the same generation.
//
// The state file is JSON:
//   {"format": "srv6gw-agent-state/1", "generation": 42, "written-at": "2024-...Z",
//    "config": {"srv6gw:gateway": {...}}}
// where "config" is config::to_json() of the whole running configuration (a valid instance of
// the YANG module: it can be loaded with `srv6gw --config` on its own). Written to a temporary
// file in the same directory, fsync'ed, renamed over the old one and the directory fsync'ed:
// after a crash the file is either the old or the new state, never a mix.
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
//                                      paths marked down over gRPC, down again at start.
struct StateExtras {
  bool engine_params_from_agent = false;
  std::vector<PathDown> paths_down;
  friend bool operator==(const StateExtras&, const StateExtras&) = default;
};

struct PersistedState {
  config::GatewayConfig config;
  uint64_t generation = 0;
  StateExtras extras;
};

// Returns "" on success, else why it failed (the previous file is then untouched).
std::string write_state_file(const std::string& path, const config::GatewayConfig& cfg,
                             uint64_t generation, const StateExtras& extras = {});

// "" when the state file's directory exists (it is created if missing) and takes files; else
// why not. The agent checks at start rather than at the first Apply.
std::string check_state_directory(const std::string& state_path);

// The file's state, checked by libyang and config::validate(), or why it is unusable.
std::variant<PersistedState, std::string> read_state_file(const std::string& path);

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
StartupState restore_startup_state(const std::string& state_path,
                                   const config::GatewayConfig& file_config);

}  // namespace srv6gw::agent
