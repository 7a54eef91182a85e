// SPDX-License-Identifier: BSD-3-Clause
// Incremental validation of an Apply batch: the relations between objects of the running
// configuration (policy names and their users, path ids, policy SIDs, local SIDs, steering
// matches, QP ranges, table occupancy) kept as indexes next to it, so that a batch of k
// changes is checked in O(k) instead of re-running validate() over the whole configuration.
// It lives beside validate() (validate.hpp) because the two must agree: each changed object
// gets the same per-object checks (check_policy / check_rule / check_local_sid), and the
// cross-object rules are checked against the indexes with the match keys, table counts and
// refusals validate() uses. tests/agent/test_config_index.cpp checks on random batches that
// both validations accept and refuse the same batches.
//
// Threads: owned by the agent's Apply path (serialised by its apply mutex); never shared.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "config/huge_pages.hpp"
#include "config/index_map.hpp"
#include "config/model.hpp"
#include "config/validate.hpp"

namespace srv6gw::config {

// The net effect of a batch on one key: its object before (null: did not exist) and after
// (null: deleted). Pointers into the running and the candidate configuration.
struct PolicyDelta {
  const Policy* before = nullptr;
  const Policy* after = nullptr;
};
struct RuleDelta {
  const SteeringRule* before = nullptr;
  const SteeringRule* after = nullptr;
  size_t after_index = 0;  // position in the candidate (names rules without id)
};
struct LocalSidDelta {
  const LocalSid* before = nullptr;
  const LocalSid* after = nullptr;
};
struct ConfigDelta {
  std::vector<PolicyDelta> policies;
  std::vector<RuleDelta, HugePageAllocator<RuleDelta>> rules;
  std::vector<LocalSidDelta> local_sids;
};

// A refusal, or a deleted policy that rules still use (worded by the caller, which knows
// which change deleted it).
struct IndexError {
  ConfigError error;
  std::string policy_in_use;  // "" unless a deleted policy is still used
  uint32_t user_rule_id = 0;
};

class ConfigIndex {
 public:
  ConfigIndex() = default;
  // Indexes a configuration validate() accepted. O(size).
  explicit ConfigIndex(const GatewayConfig& cfg);

  // Would `running` with `delta` applied be accepted by validate()? `running` is the
  // configuration this index describes (settings, capacities, and rule objects for the
  // error messages). Does not change the index. O(|delta| log).
  std::optional<IndexError> check(const GatewayConfig& running, const ConfigDelta& delta) const;

  // Makes the index describe the configuration with `delta` applied (after check()).
  void commit(const ConfigDelta& delta);

  size_t rule_count() const { return matches_.size(); }

 private:
  struct Owner {
    std::string policy;
    std::string segment_list;
  };
  void add_policy(const Policy& p);
  void remove_policy(const Policy& p);
  void add_rule(const SteeringRule& r);
  void remove_rule(const SteeringRule& r);

  // policy name -> number of steering rules that name it (present = the policy exists).
  std::unordered_map<std::string, int64_t> policy_users_;
  std::unordered_map<uint16_t, Owner> path_owner_;
  std::map<net::Ipv6Addr, std::vector<Owner>> policy_sids_;  // SID -> lists that carry it
  std::map<net::Ipv6Addr, srv6::LocalSidBehavior> local_sids_;
  // Policies that name a remote probe SID: they need a local end-probe SID
  // (docs/design/probing.md).
  std::set<std::string> probed_policies_;
  // Rules by what they match (id), and QP ranges by scope then qp_low -> (qp_high, id).
  IndexMap<SteeringMatch, uint32_t, SteeringMatchHash> matches_;
  std::map<SteeringMatch, std::map<uint32_t, std::pair<uint32_t, uint32_t>>> ranges_;
  SteeringCounts counts_;
};

}  // namespace srv6gw::config
