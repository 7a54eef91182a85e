// SPDX-License-Identifier: BSD-3-Clause
// Brute-force references for the pathalg tests: every simple path by exhaustive DFS, small
// irregular fabrics.
#pragma once

#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "pathalg/topology.hpp"

namespace pathalg_test {

using namespace srv6gw::pathalg;

inline LeafSpineSpec spec(unsigned leaves, unsigned spines, unsigned hosts_per_leaf,
                          uint16_t lag = 1, uint64_t member_mbps = 400000,
                          uint64_t host_mbps = 400000) {
  LeafSpineSpec s;
  s.leaves = leaves;
  s.spines = spines;
  s.hosts_per_leaf = hosts_per_leaf;
  s.lag_members = lag;
  s.member_mbps = member_mbps;
  s.host_mbps = host_mbps;
  return s;
}

inline FatTreeSpec fat(unsigned k) {
  FatTreeSpec s;
  s.k = k;
  return s;
}

inline Node named(std::string name, Role role) {
  Node n;
  n.name = std::move(name);
  n.role = role;
  return n;
}

// Every simple path src -> dst whose transit nodes are switches, up to max_hops links.
inline std::vector<std::vector<NodeId>> all_simple_paths(const Topology& t, NodeId src, NodeId dst,
                                                         size_t max_hops = 8) {
  std::vector<std::vector<NodeId>> out;
  std::vector<NodeId> path{src};
  std::vector<char> on(t.node_count(), 0);
  on[src] = 1;
  std::function<void(NodeId)> dfs = [&](NodeId u) {
    if (u == dst) {
      out.push_back(path);
      return;
    }
    if (path.size() > max_hops) return;
    if (u != src && t.node(u).is_host()) return;
    for (const Adjacency& a : t.neighbours(u)) {
      if (on[a.neighbour]) continue;
      on[a.neighbour] = 1;
      path.push_back(a.neighbour);
      dfs(a.neighbour);
      path.pop_back();
      on[a.neighbour] = 0;
    }
  };
  dfs(src);
  return out;
}

inline std::set<std::vector<NodeId>> shortest_of(const std::vector<std::vector<NodeId>>& all) {
  size_t best = SIZE_MAX;
  for (const auto& p : all) best = std::min(best, p.size());
  std::set<std::vector<NodeId>> s;
  for (const auto& p : all) {
    if (p.size() == best) s.insert(p);
  }
  return s;
}

// A random connected fabric: `switches` switches (first half leaves) with extra random links,
// two hosts on random leaves. Returns a topology that passes check().
inline Topology random_fabric(unsigned seed, unsigned switches = 7, unsigned extra = 5) {
  std::mt19937 rng(seed);
  Topology t;
  std::vector<NodeId> sw;
  for (unsigned i = 0; i < switches; ++i) {
    Node n;
    n.name = "s" + std::to_string(i);
    n.role = i < switches / 2 ? Role::leaf : Role::spine;
    srv6gw::net::Ipv6Addr sid;
    sid.bytes[0] = 0xfc;
    sid.bytes[5] = uint8_t(i + 1);
    n.usid = sid;
    sid.bytes[15] = 0xe;
    n.sid = sid;
    sw.push_back(t.add_node(n));
  }
  std::set<std::pair<NodeId, NodeId>> have;
  auto link = [&](NodeId a, NodeId b, uint16_t members) {
    if (a == b || !have.insert(std::minmax(a, b)).second) return;
    t.connect(a, b, members, 100000);
  };
  // A spanning tree in which every leaf hangs off a spine, then random extra links.
  const unsigned leaves = switches / 2;
  for (unsigned i = leaves; i < switches; ++i) {
    if (i > leaves) link(sw[i], sw[leaves + rng() % (i - leaves)], 1);
  }
  for (unsigned i = 0; i < leaves; ++i) link(sw[i], sw[leaves + rng() % (switches - leaves)], 1);
  for (unsigned e = 0; e < extra; ++e) {
    link(sw[rng() % switches], sw[rng() % switches], uint16_t(1 + rng() % 2));
  }
  for (unsigned h = 0; h < 3; ++h) {
    Node n;
    n.name = "h" + std::to_string(h);
    n.role = Role::host;
    n.address = srv6gw::net::IpAddr::v4({{10, 0, 0, uint8_t(h + 1)}});
    srv6gw::net::Ipv6Addr g;
    g.bytes[0] = 0xfc;
    g.bytes[4] = 0x10;
    g.bytes[5] = uint8_t(h);
    n.gateway.usid = g;
    n.gateway.locator = g;
    g.bytes[15] = 1;
    n.gateway.source = g;
    g.bytes[15] = 0x46;
    n.gateway.decap_sid = g;
    const NodeId id = t.add_node(n);
    t.connect(id, sw[rng() % leaves], 1, 100000);
  }
  return t;
}

}  // namespace pathalg_test
