// SPDX-License-Identifier: BSD-3-Clause
// The agent's applied state and how a batch of changes turns one state into the next. Pure
// control-plane logic (no gRPC server, no data plane), so it is cheap to test and to time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "agent/event_bus.hpp"
#include "config/config_index.hpp"
#include "config/huge_pages.hpp"
#include "config/index_map.hpp"
#include "config/model.hpp"
#include "srv6gw/v1/srv6gw.pb.h"

namespace srv6gw::agent {

// Steering rules by id: position in config.steering, and (built on first use) every position
// sorted by id, for paging.
class SteeringIndex {
 public:
  config::IndexMap<uint32_t, uint32_t> position;  // id -> index in config.steering
  // Positions of config.steering ordered by rule id. Thread-safe, built once.
  const std::vector<uint32_t>& by_id(const std::vector<config::SteeringRule>& rules) const;

 private:
  mutable std::once_flag sorted_once_;
  mutable std::vector<uint32_t> sorted_;
};

// One applied state. Immutable once published: readers (List*, Get*) hold a shared_ptr to it
// while an Apply builds the next one.
struct AgentState {
  config::GatewayConfig config;
  uint64_t generation = 0;
  std::shared_ptr<SteeringIndex> steering_index;  // never shared between states
};

std::shared_ptr<AgentState> make_state(config::GatewayConfig cfg, uint64_t generation);
// A copy (O(size)); the agent copies only when it has no spare state to bring up to date.
std::shared_ptr<AgentState> copy_state(const AgentState& s);

// The net effect of a batch: per key touched, the object it ends with (nullopt = deleted),
// in the order the keys were first touched. Applying it to a state equal to the batch's base
// gives the batch's result; applying it to two equal states leaves them equal (same order of
// rules too), which is how the agent brings its spare state up to date.
struct Changeset {
  std::vector<std::pair<std::string, std::optional<config::Policy>>> policies;
  // Up to one entry per rule of a batch (100k: ~10 MB): in huge pages.
  using RuleChange = std::pair<uint32_t, std::optional<config::SteeringRule>>;
  std::vector<RuleChange, config::HugePageAllocator<RuleChange>> rules;
  std::vector<std::pair<net::Ipv6Addr, std::optional<config::LocalSid>>> local_sids;
  // Rails are only replaced (never added or removed at runtime), in batch order.
  std::vector<config::Rail> rails;
  // How many rules the changeset adds to its base (a hint to grow the rule vector and its
  // index once; 0 = unknown).
  size_t rules_added = 0;
  size_t size() const { return policies.size() + rules.size() + local_sids.size() + rails.size(); }
};

// Applies `changes` to `state` in place: O(|changes|) (a deleted rule's slot takes the last
// rule). The state must not be published. Its by-id order is rebuilt on first use.
void apply_changeset(const Changeset& changes, AgentState& state);

enum class BatchCode : uint8_t { invalid_argument, not_found };

struct BatchError {
  BatchCode code = BatchCode::invalid_argument;
  std::string message;
};

// How a batch's result is checked: against the indexes of the running configuration (only
// the changed objects are looked at), or by config::validate() over the whole result (the
// file loader's check; tests compare both).
enum class Validation : uint8_t { incremental, full };

// Turns a batch of changes into its net Changeset against `base` and checks the result
// (Validation) without building it: O(batch) with incremental validation. On success
// changeset() is what to apply and delta() what changed (for ConfigIndex::commit); describe()
// attributes a later refusal (by the data plane) to the change that caused it.
class Batch {
 public:
  // `index` describes base.config (incremental validation); it is not changed here.
  Batch(const AgentState& base, const config::ConfigIndex& index,
        const google::protobuf::RepeatedPtrField<v1::Change>& changes);
  ~Batch();

  std::optional<BatchError> run(Validation validation = Validation::incremental);

  // Once run() succeeded. delta() points into base and into changeset(): valid while both
  // live and changeset() is not moved from.
  const Changeset& changeset() const { return changeset_; }
  Changeset take_changeset() { return std::move(changeset_); }
  const config::ConfigDelta& delta() const { return delta_; }

  // "changes[3].upsert_policy.segment_lists[0].sids[1]: <message> (<YANG path>)" for an error
  // on a node one of the changes wrote; "configuration refused: <message> (<YANG path>)"
  // otherwise.
  std::string describe(const config::ConfigError& e) const;

  const ChangeCounts& counts() const { return counts_; }

  // Where run() spent its time (for the agent's log line of each Apply).
  struct Times {
    double convert_ms = 0;  // the changes from protobuf to model objects, net per key
    double delta_ms = 0;    // the net changes against the running state
    double check_ms = 0;    // validation
  };
  const Times& times() const { return times_; }

 private:
  std::optional<BatchError> still_used(const std::string& policy, uint32_t rule_id,
                                       const std::string& rule_path) const;
  void build_delta();

  const AgentState& base_;
  const config::ConfigIndex& index_;
  const google::protobuf::RepeatedPtrField<v1::Change>& changes_;
  Changeset changeset_;
  config::ConfigDelta delta_;
  ChangeCounts counts_;
  Times times_;
  // Which change last wrote each key, for describe().
  std::unordered_map<std::string, int> policy_change_;
  // Per rule id of the batch: its slot in changeset_.rules and the change that last wrote it.
  struct RuleSlot {
    uint32_t slot = 0;
    int change = 0;
  };
  config::IndexMap<uint32_t, RuleSlot> rule_slot_;
  std::map<net::Ipv6Addr, int> local_sid_change_;
  std::unordered_map<std::string, int> rail_change_;  // rail name -> its last change
};

}  // namespace srv6gw::agent
