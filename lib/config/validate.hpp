// SPDX-License-Identifier: BSD-3-Clause
// Semantic validation of a GatewayConfig, in two forms that must agree:
//   validate()                 the whole configuration (file loader, restore, dry runs);
//   ConfigIndex::check()       one batch of changes against indexes of the running
//                              configuration (config/config_index.hpp, the gRPC agent).
// Both run the same per-object checks (check_policy, check_rule, check_local_sid) and take
// the relations between objects (rule matches, table counts) and the wording of every
// cross-object refusal from this header, so a rule is written once.
// tests/agent/test_config_index.cpp checks on random batches that they judge alike.
#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "config/model.hpp"

namespace srv6gw::config {

// Semantic checks shared by the file loader and the gRPC agent: SID counts, weights, modes,
// references to unknown policies, duplicates, capacity limits. Returns the first error.
std::optional<ConfigError> validate(const GatewayConfig& cfg);

// The parts of validate() that look at one object alone (with the gateway-wide settings
// it depends on: source address, hop limit, capacities/max-sids). validate() runs them on
// every object; ConfigIndex runs them only on the objects a batch changes and checks the
// relations between objects (unique keys, matches and path ids, references, capacities,
// overlaps) against its indexes.
std::optional<ConfigError> check_policy(const GatewayConfig& settings, const Policy& p);
// `index` (0-based position) only names rules without an id.
std::optional<ConfigError> check_rule(const SteeringRule& r, size_t index);
std::optional<ConfigError> check_local_sid(const LocalSid& ls);
// A policy's rail scope (policy/rails): every name a rail of the configuration (the implicit
// rail of a single pair is kImplicitRailName), each once. Part of check_policy.
std::optional<ConfigError> check_policy_rails(const GatewaySettings& cfg, const Policy& p);
// A probed policy (probe-sid) needs a fabric next-hop MAC on every rail that probes it: the
// rail's own, else ports/fabric-nexthop-mac. Part of check_policy.
std::optional<ConfigError> check_probe_nexthop(const GatewaySettings& cfg, const Policy& p);

// What may change about rails in a running gateway (an Apply, docs/design/rails.md): the
// same rails by name and order, each with the same ports, queues, source address and MTUs
// (set up at start: ports opened, workers started, port MTUs set). Their MACs, fabric VLAN
// and local SIDs are read from the published configuration and may change. The error names
// the first leaf that would need a restart.
std::optional<ConfigError> check_rails_change(const GatewaySettings& running,
                                              const GatewaySettings& next);

// ---------------------------------------------------------------------------------------
// Cross-object refusals, worded once for both validations.

// `policy` is one too many: `count` policies exceed capacities/policies.
ConfigError too_many_policies(std::string_view policy, size_t count, uint32_t capacity);
ConfigError too_many_local_sids(const net::Ipv6Addr& sid, size_t count, uint32_t capacity);
// Segment list `segment_list` of `policy` reuses the path id of the owner's list.
ConfigError path_id_conflict(std::string_view policy, std::string_view segment_list,
                             uint16_t path_id, std::string_view owner_policy,
                             std::string_view owner_segment_list);
// Local SID `sid` is also a SID of a policy's segment list.
ConfigError local_sid_conflict(const net::Ipv6Addr& sid, std::string_view policy,
                               std::string_view segment_list);
// `policy` names a probe SID and the gateway has no end-probe local SID.
ConfigError probe_needs_local_sid(std::string_view policy);
ConfigError unknown_policy(const SteeringRule& r, size_t index);
// Rule `r` matches what the rule at `other_path` matches.
ConfigError same_match(const SteeringRule& r, size_t index, const std::string& other_path);
ConfigError qp_range_overlap(const SteeringRule& r, size_t index, const std::string& other_path);

// What a steering rule matches on; two rules with equal matches are duplicates. Fields
// a kind does not match on are zero.
struct SteeringMatch {
  SteeringKind kind = SteeringKind::exact;
  net::Family family = net::Family::none;
  bool has_dst = false;
  uint8_t prefix_len = 0;
  int16_t dscp = -1;  // -1 = any
  std::array<uint8_t, 16> dst{};
  uint32_t dest_qp = 0, qp_low = 0, qp_high = 0;
  friend bool operator==(const SteeringMatch&, const SteeringMatch&) = default;
  friend auto operator<=>(const SteeringMatch&, const SteeringMatch&) = default;
};
struct SteeringMatchHash {
  size_t operator()(const SteeringMatch& m) const;
};
SteeringMatch steering_match(const SteeringRule& r);
// QP ranges of one scope (destination or none, DSCP) must not overlap: the scope of a
// qp-range rule (its match without the range).
SteeringMatch qp_range_scope(const SteeringRule& r);

// Rules per table, against capacities.
struct SteeringCounts {
  int64_t exact = 0, lpm4 = 0, lpm6 = 0, qp_ranges = 0;
  void add(const SteeringRule& r, int delta);
  // The refusal naming `r` when the table `r` goes into is over capacity.
  std::optional<ConfigError> check(const Capacities& caps, const SteeringRule& r,
                                   size_t index) const;
};

}  // namespace srv6gw::config
