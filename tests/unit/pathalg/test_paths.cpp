// SPDX-License-Identifier: BSD-3-Clause
// Path enumeration, disjoint and backup paths and SID lists against brute force.
#include <gtest/gtest.h>

#include <set>

#include "brute.hpp"
#include "pathalg/paths.hpp"
#include "pathalg/segments.hpp"
#include "srv6/encap.hpp"

using namespace srv6gw;
using namespace srv6gw::pathalg;
using pathalg_test::all_simple_paths;
using pathalg_test::fat;
using pathalg_test::named;
using pathalg_test::random_fabric;
using pathalg_test::shortest_of;
using pathalg_test::spec;

namespace {

std::vector<Topology> small_fabrics() {
  std::vector<Topology> v;
  v.push_back(make_leaf_spine(spec(3, 3, 2)));
  v.push_back(make_fat_tree(fat(4)));
  LeafSpineSpec planes = spec(2, 2, 2);
  planes.planes = 2;
  v.push_back(make_leaf_spine(planes));
  for (unsigned seed = 1; seed <= 12; ++seed) v.push_back(random_fabric(seed));
  return v;
}

// Links agree with nodes, no node twice, no host in transit.
void expect_well_formed(const Topology& t, std::span<const NodeId> nodes,
                        std::span<const DirLinkId> links) {
  ASSERT_EQ(links.size() + 1, nodes.size());
  for (size_t i = 0; i < links.size(); ++i) {
    EXPECT_EQ(t.from(links[i]), nodes[i]);
    EXPECT_EQ(t.to(links[i]), nodes[i + 1]);
  }
  std::set<NodeId> seen(nodes.begin(), nodes.end());
  EXPECT_EQ(seen.size(), nodes.size()) << "loop in " << path_key(t, nodes);
  for (size_t i = 1; i + 1 < nodes.size(); ++i) EXPECT_FALSE(t.node(nodes[i]).is_host());
}

}  // namespace

TEST(Paths, ShortestPathSetsEqualBruteForce) {
  size_t pairs = 0;
  for (const Topology& t : small_fabrics()) {
    ASSERT_FALSE(check(t)) << check(t)->message;
    PathCache cache(t);
    for (NodeId s : t.hosts()) {
      for (NodeId d : t.hosts()) {
        if (s == d) continue;
        SCOPED_TRACE(t.node(s).name + " -> " + t.node(d).name + " in " + t.name);
        const auto expected = shortest_of(all_simple_paths(t, s, d));
        const PathList got = cache.between(s, d);
        std::set<std::vector<NodeId>> got_set;
        for (size_t i = 0; i < got.size(); ++i) {
          expect_well_formed(t, got.nodes(i), got.links(i));
          const auto n = got.nodes(i);
          EXPECT_TRUE(got_set.emplace(n.begin(), n.end()).second) << "duplicate path";
        }
        EXPECT_EQ(got_set, expected);
        EXPECT_EQ(cache.shortest_path_count(s, d), expected.size());
        ++pairs;
      }
    }
  }
  EXPECT_GT(pairs, 300u);
}

TEST(Paths, OrderIsDeterministicAndCapped) {
  const Topology t = make_leaf_spine(spec(2, 8, 1));
  PathCache a(t), b(t, {.max_paths = 3});
  const PathList all = a.between(t.hosts()[0], t.hosts()[1]);
  const PathList three = b.between(t.hosts()[0], t.hosts()[1]);
  ASSERT_EQ(all.size(), 8u);
  ASSERT_EQ(three.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(path_key(t, all.nodes(i)), path_key(t, three.nodes(i)));
  }
  EXPECT_EQ(path_key(t, all.nodes(0)), "h0>leaf0>spine0>leaf1>h1");
}

// Maximum number of pairwise link-disjoint paths by exhaustive search over simple paths.
size_t brute_max_disjoint(const Topology& t, const std::vector<std::vector<NodeId>>& paths) {
  std::vector<std::set<LinkId>> links;
  for (const auto& p : paths) {
    std::set<LinkId> s;
    for (size_t i = 0; i + 1 < p.size(); ++i) s.insert(*t.find_link(p[i], p[i + 1]));
    links.push_back(s);
  }
  size_t best = 0;
  std::set<LinkId> used;
  std::function<void(size_t, size_t)> go = [&](size_t from, size_t count) {
    best = std::max(best, count);
    for (size_t i = from; i < links.size(); ++i) {
      bool free = true;
      for (LinkId l : links[i]) free &= !used.count(l);
      if (!free) continue;
      for (LinkId l : links[i]) used.insert(l);
      go(i + 1, count + 1);
      for (LinkId l : links[i]) used.erase(l);
    }
  };
  go(0, 0);
  return best;
}

TEST(Paths, DisjointPathsAreMaximalAndDisjoint) {
  for (unsigned seed = 1; seed <= 10; ++seed) {
    const Topology t = random_fabric(seed, 6, 6);
    const NodeId s = t.hosts()[0], d = t.hosts()[1];
    // Hosts have one link each: raise the question between switches too.
    const NodeId a = 0, b = NodeId(t.node_count() - t.hosts().size() - 1);
    for (auto [x, y] : {std::pair{s, d}, std::pair{a, b}}) {
      SCOPED_TRACE("seed " + std::to_string(seed));
      const PathList got = disjoint_paths(t, x, y, 16);
      std::set<LinkId> used;
      for (size_t i = 0; i < got.size(); ++i) {
        expect_well_formed(t, got.nodes(i), got.links(i));
        EXPECT_EQ(got.nodes(i).front(), x);
        EXPECT_EQ(got.nodes(i).back(), y);
        for (DirLinkId l : got.links(i)) EXPECT_TRUE(used.insert(link_of(l)).second);
      }
      EXPECT_EQ(got.size(), brute_max_disjoint(t, all_simple_paths(t, x, y, 12)));
    }
  }
}

TEST(Paths, DisjointPathsSkipLinksDown) {
  Topology t = make_leaf_spine(spec(2, 4, 1));
  EXPECT_EQ(disjoint_paths(t, *t.find_node("leaf0"), *t.find_node("leaf1"), 8).size(), 4u);
  t.apply({*t.find_link(*t.find_node("leaf0"), *t.find_node("spine2")), LinkState::down, 1, {}});
  EXPECT_EQ(disjoint_paths(t, *t.find_node("leaf0"), *t.find_node("leaf1"), 8).size(), 3u);
}

TEST(Paths, BackupsAreNewLoopFreeAndShareFewLinks) {
  const Topology t = make_leaf_spine(spec(3, 2, 1));
  PathCache cache(t);
  const NodeId s = t.hosts()[0], d = t.hosts()[1];
  const PathList primaries = cache.between(s, d);
  const PathList b = backup_paths(t, s, d, primaries, 2);
  ASSERT_EQ(b.size(), 2u);
  std::set<std::string> prim;
  for (size_t i = 0; i < primaries.size(); ++i) prim.insert(path_key(t, primaries.nodes(i)));
  for (size_t i = 0; i < b.size(); ++i) {
    expect_well_formed(t, b.nodes(i), b.links(i));
    EXPECT_FALSE(prim.count(path_key(t, b.nodes(i))));
  }
  // The detour through the third leaf, using each spine once (the fewest shared links).
  EXPECT_EQ(path_key(t, b.nodes(0)), "h0>leaf0>spine0>leaf2>spine1>leaf1>h1");
  EXPECT_EQ(path_key(t, b.nodes(1)), "h0>leaf0>spine1>leaf2>spine0>leaf1>h1");
}

// Forwarding between waypoints on the unique shortest path reconstructs the path.
void expect_minimal_pins_path(const PathCache& cache, std::span<const NodeId> path,
                              const std::vector<net::Ipv6Addr>& sids) {
  const Topology& t = cache.topology();
  std::vector<NodeId> waypoints{path.front()};
  for (size_t i = 0; i + 1 < sids.size(); ++i) {
    NodeId found = kNoNode;
    for (NodeId n = 0; n < t.node_count(); ++n) {
      if (t.node(n).sid == sids[i]) found = n;
    }
    ASSERT_NE(found, kNoNode);
    waypoints.push_back(found);
  }
  waypoints.push_back(path.back());
  std::vector<NodeId> rebuilt{path.front()};
  for (size_t i = 0; i + 1 < waypoints.size(); ++i) {
    const PathList seg = cache.between(waypoints[i], waypoints[i + 1]);
    ASSERT_EQ(seg.size(), 1u) << "segment " << i << " is not pinned";
    const auto n = seg.nodes(0);
    rebuilt.insert(rebuilt.end(), n.begin() + 1, n.end());
  }
  EXPECT_EQ(rebuilt, std::vector<NodeId>(path.begin(), path.end()));
}

TEST(Segments, MinimalWaypointsPinEveryPath) {
  for (const Topology& t : small_fabrics()) {
    PathCache cache(t);
    for (NodeId s : t.hosts()) {
      for (NodeId d : t.hosts()) {
        if (s == d) continue;
        const PathList p = cache.between(s, d);
        for (size_t i = 0; i < p.size(); ++i) {
          std::vector<net::Ipv6Addr> sids;
          std::string error;
          ASSERT_TRUE(build_sids(cache, p.nodes(i), {}, sids, &error)) << error;
          EXPECT_EQ(sids.back(), t.node(d).gateway.decap_sid);
          expect_minimal_pins_path(cache, p.nodes(i), sids);
        }
      }
    }
  }
}

TEST(Segments, TwoTierAndFatTreeShapes) {
  const Topology ls = make_leaf_spine(spec(2, 2, 1));
  PathCache c1(ls);
  const PathList p = c1.between(ls.hosts()[0], ls.hosts()[1]);
  std::vector<net::Ipv6Addr> sids;
  ASSERT_TRUE(build_sids(c1, p.nodes(1), {}, sids));
  ASSERT_EQ(sids.size(), 2u);
  EXPECT_EQ(net::to_string(sids[0]), "fc00:0:103::e");  // spine1
  EXPECT_EQ(net::to_string(sids[1]), "fc00:0:1001::d46");
  SegmentOptions every;
  every.encap = srv6::EncapMode::usid;
  every.style = SidStyle::every_switch;
  ASSERT_TRUE(build_sids(c1, p.nodes(1), every, sids));
  ASSERT_EQ(sids.size(), 4u);  // leaf0 spine1 leaf1 gateway, micro-SIDs
  EXPECT_EQ(net::to_string(sids[0]), "fc00:0:100::");
  EXPECT_EQ(net::to_string(sids[3]), "fc00:0:1001::");

  const Topology ft = make_fat_tree(fat(4));
  PathCache c2(ft);
  const PathList q = c2.between(ft.hosts().front(), ft.hosts().back());  // across pods
  ASSERT_EQ(q.size(), 4u);
  for (size_t i = 0; i < q.size(); ++i) {
    ASSERT_TRUE(build_sids(c2, q.nodes(i), {}, sids));
    ASSERT_EQ(sids.size(), 2u);  // [core, gateway]
    EXPECT_EQ(ft.node(q.nodes(i)[3]).role, Role::super_spine);
    EXPECT_EQ(sids[0], *ft.node(q.nodes(i)[3]).sid);
  }
}

TEST(Segments, MissingSidIsNamed) {
  Topology t;
  Node leaf = named("leafA", Role::leaf);
  Node spine = named("spineB", Role::spine);  // no SIDs
  const NodeId l0 = t.add_node(leaf);
  leaf.name = "leafC";
  const NodeId l1 = t.add_node(leaf);
  const NodeId sp = t.add_node(spine);
  spine.name = "spineD";
  const NodeId sp2 = t.add_node(spine);
  Node h = named("x", Role::host);
  const NodeId hx = t.add_node(h);
  h.name = "y";
  h.gateway.decap_sid.bytes[0] = 0xfc;
  const NodeId hy = t.add_node(h);
  for (auto [a, b] : {std::pair{hx, l0}, {hy, l1}, {l0, sp}, {l1, sp}, {l0, sp2}, {l1, sp2}}) {
    t.connect(a, b, 1, 1000);
  }
  PathCache cache(t);
  std::vector<net::Ipv6Addr> sids;
  std::string error;
  EXPECT_FALSE(build_sids(cache, cache.between(hx, hy).nodes(0), {}, sids, &error));
  EXPECT_NE(error.find("switch 'spineB' has no sid"), std::string::npos) << error;
}

TEST(Segments, EncapBytesAreTheGatewayTemplate) {
  const auto src = *net::parse_ipv6("fc00:0:1000::1");
  const std::vector<net::Ipv6Addr> sids{*net::parse_ipv6("fc00:0:108::"),
                                        *net::parse_ipv6("fc00:0:1064::")};
  const auto bytes = encap_bytes(src, sids, srv6::EncapMode::usid, {}, 77);
  ASSERT_TRUE(bytes);
  // One container fc00:0:108:1064:: in the DA, no SRH (reduced form of one container).
  ASSERT_EQ(bytes->size(), 40u);
  EXPECT_EQ(net::to_string(net::Ipv6Addr{[&] {
              std::array<uint8_t, 16> a{};
              std::copy(bytes->begin() + 24, bytes->begin() + 40, a.begin());
              return a;
            }()}),
            "fc00:0:108:1064::");
  srv6::BuildStatus st{};
  const std::vector<net::Ipv6Addr> outside{*net::parse_ipv6("fc00:0:108::"),
                                           *net::parse_ipv6("fc00:1:1064::")};
  EXPECT_FALSE(encap_bytes(src, outside, srv6::EncapMode::usid, {}, 1, 64, &st));
  EXPECT_EQ(st, srv6::BuildStatus::sid_not_in_block);
}
