// SPDX-License-Identifier: BSD-3-Clause
// Application-aware flow placement: given flows with sizes (what a collective library knows
// before the collective starts), choose one path per flow among the usable shortest paths of
// its (source, destination) so that the most loaded directed link is as light as possible.
// Load of a link = bytes placed on it / its capacity in force, i.e. the seconds that link
// needs to carry them; the maximum over links is what bounds the collective's completion.
//
// Method: exact branch and bound when the instance is small enough to finish within a node
// budget (then the result is proven optimal); otherwise greedy largest-first (each flow to the
// path whose most loaded link would be lightest) followed by local improvement (move a flow
// off the most loaded link while that lowers it). A lower bound from link cuts is reported
// alongside.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "pathalg/paths.hpp"
#include "pathalg/topology.hpp"

namespace srv6gw::pathalg {

struct Flow {
  NodeId src = kNoNode;  // source host
  NodeId dst = kNoNode;  // destination host
  uint32_t dest_qp = 0;  // BTH DestQP (24 bits): the steering rule's match with dst
  uint64_t bytes = 0;
};

inline constexpr uint32_t kNoPath = UINT32_MAX;

struct PlacementOptions {
  // Branch-and-bound nodes the exact search may visit before giving up on proving optimality
  // (its best assignment so far is still used when better than the heuristic's).
  uint64_t exact_node_budget = 2000000;
  // Improvement passes of the heuristic (each moves one flow off the hottest link).
  unsigned improvement_rounds = 10000;
  bool exact = true;  // false: heuristic only
};

struct Placement {
  // Per flow: index into cache.between(src, dst) of its path; kNoPath when no usable path
  // exists (source or destination cut off).
  std::vector<uint32_t> path_of;
  // Per directed link (DirLinkId): bytes placed on it.
  std::vector<uint64_t> link_bytes;
  double max_load_s = 0;      // most loaded link: bytes * 8 / capacity (seconds)
  DirLinkId hottest = 0;      // that link
  double lower_bound_s = 0;   // no placement (even splitting flows) can do better than this
  bool optimal = false;       // proven optimal by the exact search
  uint32_t unplaced = 0;      // flows without a usable path
  uint64_t search_nodes = 0;  // exact search nodes visited
};

// Seconds a directed link needs for `bytes` at its capacity in force (infinity when 0).
double link_load_s(const Topology& t, DirLinkId d, uint64_t bytes);

// Places every flow. Deterministic for the same input.
Placement place(const PathCache& cache, std::span<const Flow> flows,
                const PlacementOptions& opt = {});

// The lower bound alone: the largest of (a) each flow alone on its best path, and (b) for each
// hop position, the bytes of the flows whose usable paths all cross the same set of links at
// that hop (a host's uplink, a leaf's uplinks, a leaf's downlinks...) over that set's
// capacity.
double placement_lower_bound(const PathCache& cache, std::span<const Flow> flows);

// Max link load of a given assignment (path_of as in Placement), for comparisons.
double max_load_of(const PathCache& cache, std::span<const Flow> flows,
                   std::span<const uint32_t> path_of);

}  // namespace srv6gw::pathalg
