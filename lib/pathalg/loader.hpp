// SPDX-License-Identifier: BSD-3-Clause
// Topology files: JSON instance data of the YANG module srv6gw-topology
// (config/yang/srv6gw-topology.yang), checked by libyang (types, structure, references to
// switches and hosts) and then by check() (semantics), so every error names its node.
// Control plane only.
#pragma once

#include <string>
#include <string_view>
#include <variant>

#include "pathalg/topology.hpp"

namespace srv6gw::pathalg {

using TopologyResult = std::variant<Topology, TopologyError>;

// Reads and loads a JSON file. An unreadable file gives an error with an empty path.
TopologyResult load_topology_file(const std::string& path);
// Loads JSON text ({"srv6gw-topology:topology": {...}}).
TopologyResult load_topology_json(std::string_view json);
// The topology as JSON of the YANG module (loads back to an equal topology).
std::string to_json(const Topology& t);

}  // namespace srv6gw::pathalg
