// SPDX-License-Identifier: BSD-3-Clause
// srv6gw's own command line (everything after the EAL arguments and `--`). Parsed before
// EAL init so that a typo or a bad config file fails fast, without touching hugepages.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "agent/options.hpp"

namespace srv6gw::app {

struct Options {
  std::string config_path;                     // --config FILE (required)
  std::optional<std::string> host_port;        // --host-port NAME|ID, overrides the config
  std::optional<std::string> fabric_port;      // --fabric-port NAME|ID, overrides the config
  std::optional<uint32_t> stats_interval_ms;   // --stats-interval MS (0 = no periodic line)
  std::optional<double> duration_s;            // --duration S: stop after S seconds
  std::optional<uint32_t> until_idle_ms;       // --until-idle MS: stop when RX went idle
  std::string log_level = "info";              // --log-level trace|debug|info|warn|error
  std::optional<std::string> stats_json_path;  // --stats-json FILE: final stats as JSON
  // --assume-multiseg-tx: chain encap header segments on the fabric port even though its PMD
  // does not advertise RTE_ETH_TX_OFFLOAD_MULTI_SEGS (net_null frees chains whole: benchmarks
  // of 6+ full SIDs). Wrong on a PMD that really cannot send chains.
  bool assume_multiseg_tx = false;
  // --metrics-address [HOST:]PORT: the Prometheus endpoint (metrics.hpp); none = no listener.
  std::optional<std::string> metrics_address;
  // --link-propagation: the fabric port's link down sets the host port's link down, and up
  // again when it returns (bump in the wire; docs/design/lossless.md).
  bool link_propagation = false;
  bool help = false;
  bool version = false;  // --version
};

struct OptionsError {
  std::string message;
};

// Parses the srv6gw options and the agent's (argv excludes the program name).
std::variant<Options, OptionsError> parse_options(const std::vector<std::string>& args,
                                                  agent::AgentOptions& agent);

// The command line split at the first "--": EAL arguments (with argv[0]) and srv6gw's.
struct SplitArgs {
  std::vector<std::string> eal;
  std::vector<std::string> app;
  bool had_separator = false;
};
SplitArgs split_args(int argc, char** argv);

// --help: srv6gw's options and the agent's.
std::string usage(const std::string& prog);

}  // namespace srv6gw::app
