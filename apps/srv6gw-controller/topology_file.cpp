// SPDX-License-Identifier: BSD-3-Clause
// The planner from a topology file (lib/pathalg's loader: libyang checks, errors name the
// node), versioned by the file's content hash.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "pathalg/loader.hpp"
#include "planner_pathalg.hpp"

namespace srv6gw::sr_controller {
namespace {

std::string fnv1a_hex(const std::string& data) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)h);
  return buf;
}

}  // namespace

std::unique_ptr<Planner> load_topology_planner(const std::string& topology_path,
                                               std::string& error) {
  std::ifstream in(topology_path, std::ios::binary);
  if (!in) {
    error = "cannot read the file";
    return nullptr;
  }
  std::ostringstream s;
  s << in.rdbuf();
  auto loaded = pathalg::load_topology_json(s.str());
  if (auto* e = std::get_if<pathalg::TopologyError>(&loaded)) {
    error = e->path.empty() ? e->message : e->path + ": " + e->message;
    return nullptr;
  }
  return make_topology_planner(std::move(std::get<pathalg::Topology>(loaded)), fnv1a_hex(s.str()));
}

}  // namespace srv6gw::sr_controller
