// SPDX-License-Identifier: BSD-3-Clause
// What the simulator needs from a fabric, as the schemes see it. The real implementation
// (pathalg_fabric.hpp) takes all of it from lib/pathalg: the topology file, its paths, their
// capacity-proportional weights and its application-aware placement. Nothing here decides a
// path on its own.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "collectives.hpp"
#include "net/addr.hpp"

namespace srv6gw::fabricsim {

struct SimLinks {
  std::vector<std::string> name;
  std::vector<double> capacity_bps;
  std::vector<double> latency_s;  // fixed per-hop term (propagation + one frame's serialisation)
  uint32_t size() const { return uint32_t(name.size()); }
};

// One candidate path from a source host to a destination host: every link it crosses (the
// hosts' own links included), in order.
struct SimPath {
  std::vector<uint32_t> links;
  double weight = 1.0;  // the path algorithm's weight (capacity-proportional)
  // The segment list the gateway would push; its first SID is the list's load group in
  // `balanced` mode (the spine of a 2-tier path), as the gateway's compile_policy keys it.
  std::vector<net::Ipv6Addr> sids;
  uint32_t path_id = 0;
};

struct SimHost {
  std::string name;
  net::IpAddr inner;  // the RoCE host's address: what the gateway's flow hash reads
};

class SimFabric {
 public:
  virtual ~SimFabric() = default;
  virtual const SimLinks& links() const = 0;
  virtual const std::vector<SimHost>& hosts() const = 0;
  virtual double nic_bps() const = 0;
  // Candidate paths from src to dst in the gateway's segment-list order (one SR policy).
  virtual std::span<const SimPath> paths(uint32_t src, uint32_t dst) const = 0;
  // Application-aware placement of the demands: an index into paths(src, dst) per demand.
  virtual std::vector<uint32_t> place(std::span<const Demand> demands) const = 0;
};

}  // namespace srv6gw::fabricsim
