// SPDX-License-Identifier: BSD-3-Clause
// SimFabric backed by lib/pathalg: the topology file, its host-to-host paths with the links
// they cross, the capacity-proportional weights and the application-aware placement all come
// from the path algorithm module. Two topologies may differ: the one the plan (paths,
// weights, placement) is computed on, and the one the traffic runs on (capacities). A plan
// computed before a degradation and run after it is the "stale" case; recomputing the plan
// on the degraded topology is rerouting.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "fabric.hpp"

namespace srv6gw::fabricsim {

// A change to one link of the topology: its capacity scaled by `factor` (0.5 = half a LAG's
// members down, 0 = the link is down).
struct LinkChange {
  std::string link;  // pathalg's link name (see --list-links)
  double factor = 0.5;
};

struct FabricOptions {
  double hop_latency_s = 1e-6;  // per link: propagation and switching
  double frame_bytes = 4096;    // one frame's serialisation per hop adds to the latency
  // Goodput per byte on the wire of the links between switches (encapsulation overhead):
  // 1.0 for the 128-GPU runs, 1024/1104 for the emulated fabric's SRv6 frames.
  double fabric_payload_fraction = 1.0;
};

std::unique_ptr<SimFabric> make_pathalg_fabric(const std::string& topology_file,
                                               std::span<const LinkChange> plan_changes,
                                               std::span<const LinkChange> run_changes,
                                               const FabricOptions& options);

// Link names of a topology file, for --degrade (and for error messages).
std::vector<std::string> pathalg_link_names(const std::string& topology_file);

}  // namespace srv6gw::fabricsim
