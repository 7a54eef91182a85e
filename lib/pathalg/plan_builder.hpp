// SPDX-License-Identifier: BSD-3-Clause
// Building one gateway's plan (plan_builder.cpp), shared by plan_gateway() and the Planner
// (planner.cpp); not part of lib/pathalg's interface. The id scheme is in plan.hpp.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "pathalg/plan.hpp"

namespace srv6gw::pathalg::plan_detail {

// The single attachment switch of a host, or kNoNode when multi-homed.
NodeId sole_attachment(const Topology& t, NodeId h);

// What building needs besides the topology state: the design's paths and the id scheme.
struct Builder {
  const PathCache& cache;
  const Topology& state;  // link states in force (same nodes and links as the cache's)
  const PlanOptions& opt;
  GatewayBooks& books;
  // Per-switch-pair backup cache (design only); may be null.
  std::unordered_map<uint64_t, PathList>* backup_cache = nullptr;

  const Topology& design() const { return cache.topology(); }

  // Slots of the design range one destination takes.
  uint32_t slots(NodeId g, NodeId d) const;

  PathList backups_for(NodeId g, NodeId d, const PathList& primaries);

  config::Policy base_policy(std::string name, NodeId d) const;

  // The multipath policy toward d with ids from `base`; pinned policies toward d for `pins`
  // (all from g to d). Appends to `out`.
  void build_destination(NodeId g, NodeId d, uint32_t rule_id, uint32_t base,
                         std::span<const Pin* const> pins, GatewayPlan& out);

  std::vector<config::LocalSid> local_sids(NodeId g) const;
};

// Policies, rules and paths in the order GatewayPlan promises (by name, id, path id).
void sort_plan(GatewayPlan& p);

// Design id bases of every destination of g (indexed by host position), and the first id
// above the design range.
std::vector<uint32_t> design_bases(const Builder& b, NodeId g, uint32_t& end);

std::unordered_map<NodeId, std::vector<const Pin*>> pins_by_dst(std::span<const Pin> pins);

}  // namespace srv6gw::pathalg::plan_detail
