// SPDX-License-Identifier: BSD-3-Clause
// Path schemes as the gateway realises them, turning demands into simulator flows:
//   hash       `flow` mode: the gateway's own bucket table (policy::compile_policy) indexed
//              by its own flow hash (policy::flow_hash of inner src, inner dst, DestQP).
//   spray      `packet` mode with equal weights: every path carries 1/k of the flow's rate.
//   wspray     `packet` mode with the path algorithm's capacity-proportional weights.
//   balanced   `balanced` mode: the gateway's own policy::select_path on policies compiled
//              in balanced mode, one SelectorState per source gateway (one worker), one
//              select call per flow's first packet in the collective's start order.
//   placement  application-aware: the path algorithm module's placement from flow sizes.
// Rerouting after a degradation is any of these run with paths, weights and placement
// recomputed by the path algorithm module on the degraded topology (main.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "collectives.hpp"
#include "engine.hpp"
#include "fabric.hpp"

namespace srv6gw::fabricsim {

enum class Scheme : uint8_t { hash, spray, wspray, balanced, placement };
inline constexpr Scheme kAllSchemes[] = {Scheme::hash, Scheme::spray, Scheme::wspray,
                                         Scheme::balanced, Scheme::placement};
const char* to_string(Scheme s);
std::optional<Scheme> parse_scheme(std::string_view name);

struct SchemeParams {
  // hash: DestQP numbers are drawn from this seed (an RNIC allocates QP numbers the gateway
  // cannot predict); 0 = the demands' own QP numbers.
  uint64_t hash_seed = 0;
};

struct Routed {
  Workload workload;
  // The fabric's link capacities, then one private link per rate-limited demand (its
  // sender's rate): what simulate() runs on.
  std::vector<double> capacity_bps;
  std::vector<uint32_t> flow_of_demand;  // demand -> workload flow (several may share one)
  // Diagnostics: fabric links' offered load at t = 0 relative to capacity if every flow ran
  // at the NIC-fair rate (the worst one), and the path index each single-path demand took.
  std::vector<uint32_t> path_of_demand;  // UINT32_MAX for sprayed demands
};

Routed route(const SimFabric& fab, std::span<const Demand> demands, Scheme scheme,
             const SchemeParams& params = {});

// Bytes placed on each link by the routing (sprayed flows by their shares): the static load
// the schemes are judged by, beside the simulated completion time.
std::vector<double> link_bytes(const Routed& r, std::span<const Demand> demands, uint32_t n_links);

}  // namespace srv6gw::fabricsim
