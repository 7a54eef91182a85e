// SPDX-License-Identifier: BSD-3-Clause
// Path enumeration over the design topology: every shortest path between two hosts (or two
// switches), loop-free by construction (each hop strictly closer to the destination), never
// through a host, with the directed links it crosses. Switch-to-switch path sets are computed
// once per pair and cached, so that host-to-host sets (access link + fabric path + access
// link) cost no search. Also: link-disjoint paths (maximum number, minimum total length) and
// backup paths that avoid a set of primaries as far as the topology allows.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "pathalg/topology.hpp"

namespace srv6gw::pathalg {

// Paths in flat arrays (no allocation per path): path i has nodes()[i] (source first,
// destination last) and links()[i] (nodes - 1 directed links, in path order).
class PathList {
 public:
  size_t size() const { return node_begin_.size() - 1; }
  bool empty() const { return size() == 0; }
  std::span<const NodeId> nodes(size_t i) const {
    return {nodes_.data() + node_begin_[i], node_begin_[i + 1] - node_begin_[i]};
  }
  std::span<const DirLinkId> links(size_t i) const {
    return {links_.data() + link_begin_[i], link_begin_[i + 1] - link_begin_[i]};
  }
  // Appends a path; links.size() must be nodes.size() - 1.
  void add(std::span<const NodeId> nodes, std::span<const DirLinkId> links);
  void clear();
  // Hop count of path i (its number of links).
  size_t hops(size_t i) const { return link_begin_[i + 1] - link_begin_[i]; }

 private:
  std::vector<NodeId> nodes_;
  std::vector<DirLinkId> links_;
  std::vector<uint32_t> node_begin_{0};
  std::vector<uint32_t> link_begin_{0};
};

// The smallest capacity in force along a path (0 when a link is down).
uint64_t bottleneck_mbps(const Topology& t, std::span<const DirLinkId> links);
// Every link of the path is up with capacity > 0.
bool usable(const Topology& t, std::span<const DirLinkId> links);
// Stable identity of a path: its node names joined by '>' ("h1>leaf1>spine3>leaf5>h77").
std::string path_key(const Topology& t, std::span<const NodeId> nodes);

struct PathOptions {
  // At most this many shortest paths per pair (the gateway holds 64 segment lists per policy).
  // Paths are ordered by the sequence of node ids along them, so a cap keeps a stable subset.
  unsigned max_paths = 64;
};

// Shortest-path sets of one topology's design. Built once; the topology's link states may
// change afterwards (the sets do not depend on them) but its nodes and links must not.
// Thread-safe for concurrent readers (the cache is filled under a lock).
class PathCache {
 public:
  explicit PathCache(const Topology& t, PathOptions opt = {});
  ~PathCache();
  PathCache(const PathCache&) = delete;
  PathCache& operator=(const PathCache&) = delete;

  const Topology& topology() const { return topo_; }
  const PathOptions& options() const { return opt_; }

  // Every shortest path from node src to node dst (hosts or switches), in a deterministic
  // order. Paths between two hosts go through switches only.
  PathList between(NodeId src, NodeId dst) const;
  // The same, appended to `out` (no allocation once `out` has grown).
  void append_between(NodeId src, NodeId dst, PathList& out) const;
  // Hop distance in the design (UINT32_MAX when unreachable).
  uint32_t distance(NodeId src, NodeId dst) const;
  // Number of shortest paths from src to dst (saturating at UINT32_MAX).
  uint32_t shortest_path_count(NodeId src, NodeId dst) const;

 private:
  struct Tables;
  const Topology& topo_;
  PathOptions opt_;
  std::unique_ptr<Tables> tables_;
};

// Up to k pairwise link-disjoint paths from src to dst over links in force (state up), as many
// as exist (max-flow), with the least total hop count among such sets (successive shortest
// paths). Hosts are never transit nodes.
PathList disjoint_paths(const Topology& t, NodeId src, NodeId dst, unsigned k);

// Up to k backup paths from src to dst over the design: loop-free, not in `primaries`, each
// the shortest path that crosses the fewest links already used by the primaries and earlier
// backups (a detour through another leaf in a 2-tier fabric). Deterministic.
PathList backup_paths(const Topology& t, NodeId src, NodeId dst, const PathList& primaries,
                      unsigned k);

}  // namespace srv6gw::pathalg
