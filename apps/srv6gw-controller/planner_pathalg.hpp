// SPDX-License-Identifier: BSD-3-Clause
// The Planner over lib/pathalg built from a topology already in memory (tests, generators);
// load_topology_planner() (planner.hpp) is the same from a file.
#pragma once

#include <memory>
#include <string>

#include "pathalg/topology.hpp"
#include "planner.hpp"

namespace srv6gw::sr_controller {

std::unique_ptr<Planner> make_topology_planner(pathalg::Topology topology, std::string version);

}  // namespace srv6gw::sr_controller
