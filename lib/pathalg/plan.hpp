// SPDX-License-Identifier: BSD-3-Clause
// Policy generation: from a topology (and optionally placed flows) to what one gateway must
// hold, in the gateway's own configuration model (config::Policy, config::SteeringRule,
// config::LocalSid), so that config::validate() and the agent's proto conversion apply as-is.
//
// Per gateway G and every other host D:
//   policy "to-D": one segment list per shortest G->D path of the design, weight proportional
//     to the path's bottleneck capacity in force over the links not shared by all its paths
//     (a LAG with one of two members down halves that path's weight), down paths kept with
//     weight 0 (their path id and counters survive; probes still test them), plus backup lists
//     (PlanOptions::backups); endpoint = D's gateway source address, probe-sid = D's probe SID.
//   rule "destination D's address -> to-D".
// Pinned flows (a Placement): policy "to-D:<path>" with the chosen path as its only active
//   list and the other usable paths as backup lists, and rule "exact (D, DestQP) -> to-D:<path>".
//   A pinned flow whose path is down falls back to "to-D" (its rule is re-pointed).
// G's own local SIDs: its decap SID, its uSID (as end-dt46) and probe SID when set.
//
// Path ids (SRH Tag, 1..32767) are unique per gateway and stable:
//   - multipath policies: numbered in design order (destinations in host order, each with
//     max(paths) + PlanOptions::backups slots), so they depend on the design only (nodes and
//     links, not their state): the same path keeps its id across failures and recomputation,
//     without any state to keep (1024 gateways x 16k paths would not fit in books).
//   - pinned policies: handed out by the gateway's IdBook (above the design range), keyed by
//     policy and path, kept by the Planner: a pinned path keeps its id while pinned.
// Rule ids: destination rules = 1 + the destination's position among hosts; pinned exact
// rules from kPinnedRuleBase, by the gateway's rule IdBook keyed by destination and DestQP.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/model.hpp"
#include "pathalg/paths.hpp"
#include "pathalg/placement.hpp"
#include "pathalg/segments.hpp"
#include "pathalg/topology.hpp"

namespace srv6gw::pathalg {

inline constexpr uint32_t kPinnedRuleBase = 0x1000000;

// Stable ids for string keys in [first, last]: a key keeps its id for the life of the book;
// a new key takes the lowest free id. Not thread-safe.
class IdBook {
 public:
  IdBook(uint32_t first, uint32_t last) : first_(first), last_(last), next_(first) {}
  // Moves the range's start (ids below it already given out stay); used once the design
  // range of a gateway is known.
  void set_first(uint32_t first);
  // The id of `key`, assigned when new; nullopt when the range is exhausted.
  std::optional<uint32_t> id(std::string_view key);
  std::optional<uint32_t> find(std::string_view key) const;
  // Forgets a key; its id becomes free again.
  void release(std::string_view key);
  size_t size() const { return by_key_.size(); }
  const std::map<std::string, uint32_t, std::less<>>& entries() const { return by_key_; }

 private:
  uint32_t first_, last_, next_;
  std::map<std::string, uint32_t, std::less<>> by_key_;
  std::set<uint32_t> used_;
};

// A gateway's ids: path ids (1..config::kMaxPathId) and rule ids.
struct GatewayBooks {
  IdBook path_ids{1, config::kMaxPathId};
  IdBook rule_ids{kPinnedRuleBase, UINT32_MAX};
};

struct PlanOptions {
  SegmentOptions segments;
  config::SelectionMode selection = config::SelectionMode::flow;
  uint32_t flowlet_gap_us = 50;
  uint32_t color = 0;
  unsigned backups = 1;         // backup lists per multipath policy
  unsigned pinned_backups = 3;  // backup lists per pinned policy (other shortest paths)
  bool keep_down_paths = true;  // false: paths down are left out instead of weight 0
  bool probe = true;            // set probe-sid from the destination's gateway
  unsigned max_paths = 64;      // shortest paths per policy (gateway limit: 64 lists)
};

// One segment list of a plan and the path behind it.
struct PlannedPath {
  std::string policy;
  std::string segment_list;
  uint16_t path_id = 0;
  NodeId dst = kNoNode;
  bool backup = false;
  bool pinned = false;           // in a pinned policy
  std::vector<NodeId> nodes;     // host .. host
  std::vector<DirLinkId> links;  // directed links crossed
};

// Everything one gateway must hold.
struct GatewayPlan {
  NodeId gateway = kNoNode;
  std::vector<config::Policy> policies;        // by name
  std::vector<config::SteeringRule> steering;  // by id
  std::vector<config::LocalSid> local_sids;    // by address
  // The path behind each segment list, by path id: lets a controller map a path id that a
  // gateway reports down to the links it crosses.
  std::vector<PlannedPath> paths;
  // Policies that could not be made (no usable path to a destination), with why.
  std::vector<std::string> unreachable;
};

// Flows pinned to paths: the output of place() for a set of flows.
struct Pin {
  NodeId src = kNoNode, dst = kNoNode;
  uint32_t dest_qp = 0;
  std::vector<NodeId> path;  // host .. host, one of cache.between(src, dst)
};
std::vector<Pin> pins_from(const PathCache& cache, std::span<const Flow> flows,
                           const Placement& placement);

// The minimal set of changes turning one plan into another: policies / rules / local SIDs
// added or changed (upserts) and removed (deletes). Order of application: local SIDs and
// policy upserts, rule upserts, rule deletes, policy deletes, local SID deletes.
struct PlanDiff {
  std::vector<config::Policy> upsert_policies;
  std::vector<std::string> delete_policies;
  std::vector<config::SteeringRule> upsert_rules;
  std::vector<uint32_t> delete_rules;
  std::vector<config::LocalSid> upsert_local_sids;
  std::vector<net::Ipv6Addr> delete_local_sids;
  bool empty() const {
    return upsert_policies.empty() && delete_policies.empty() && upsert_rules.empty() &&
           delete_rules.empty() && upsert_local_sids.empty() && delete_local_sids.empty();
  }
  size_t size() const {
    return upsert_policies.size() + delete_policies.size() + upsert_rules.size() +
           delete_rules.size() + upsert_local_sids.size() + delete_local_sids.size();
  }
};
PlanDiff diff(const GatewayPlan& from, const GatewayPlan& to);
// Everything of `plan` as upserts (a first push).
PlanDiff full(const GatewayPlan& plan);

struct GatewayChange {
  NodeId gateway = kNoNode;
  PlanDiff diff;
};

// Holds a topology, its path cache, every gateway's id books and the pinned flows; computes
// plans and, after link changes, which gateways change and how. Plans are computed on demand
// (not stored): 1024 gateways x 1023 policies would not fit comfortably in memory.
class Planner {
 public:
  Planner(Topology topology, PlanOptions options);
  ~Planner();
  Planner(const Planner&) = delete;
  Planner& operator=(const Planner&) = delete;

  const Topology& topology() const { return topo_; }
  const PathCache& paths() const { return *cache_; }
  const PlanOptions& options() const { return opt_; }
  GatewayBooks& books(NodeId gateway);

  // Replaces every pinned flow (steering of each source gateway's exact rules).
  void set_pins(std::vector<Pin> pins);
  std::span<const Pin> pins(NodeId gateway) const;

  // The full plan of one gateway under the current link states.
  GatewayPlan plan(NodeId gateway);

  // Applies link state changes and returns, for every gateway whose plan changes, the
  // minimal diff. Only policies whose paths cross a changed link are recomputed.
  // Refuses (false) an unknown link; nothing changes then.
  bool update_links(std::span<const LinkChange> changes, std::vector<GatewayChange>& out,
                    std::string* error = nullptr);

  // Gateways whose plans reference a directed link (for failure inference: a link is
  // suspected when probes find down every path crossing it).
  std::vector<NodeId> gateways_using(LinkId link) const;

 private:
  struct State;
  Topology topo_;
  PlanOptions opt_;
  std::unique_ptr<PathCache> cache_;
  std::unique_ptr<State> state_;
};

// One-shot convenience (tests, tools): the plan of `gateway` under the topology's current
// state with the given books (pinned ids) and pins.
GatewayPlan plan_gateway(const PathCache& cache, NodeId gateway, const PlanOptions& opt,
                         GatewayBooks& books, std::span<const Pin> pins = {});

// The weights of a set of paths of one policy as plan() sets them: proportional to each
// path's bottleneck capacity in force over the links not crossed by every path, reduced by
// their greatest common divisor (0 for a path with a link down).
std::vector<uint32_t> capacity_weights(const Topology& t, const PathList& paths);

}  // namespace srv6gw::pathalg
