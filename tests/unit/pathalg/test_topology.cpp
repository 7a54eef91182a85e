// SPDX-License-Identifier: BSD-3-Clause
// Topology model, check() and the libyang loader: examples load, round trip, and broken
// files are refused with the offending node named.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "brute.hpp"
#include "pathalg/loader.hpp"
#include "pathalg/topology.hpp"

using namespace srv6gw;
using namespace srv6gw::pathalg;
using pathalg_test::fat;
using pathalg_test::spec;

namespace {

const std::filesystem::path kExamples =
    std::filesystem::path(SRV6GW_SOURCE_ROOT) / "config/examples/topologies";

Topology ok(const TopologyResult& r) {
  if (auto* e = std::get_if<TopologyError>(&r)) {
    ADD_FAILURE() << e->path << ": " << e->message;
    return {};
  }
  return std::get<Topology>(r);
}

TopologyError refused(const std::string& json) {
  auto r = load_topology_json(json);
  if (auto* e = std::get_if<TopologyError>(&r)) return *e;
  ADD_FAILURE() << "accepted: " << json;
  return {};
}

// A 2-leaf / 1-spine fabric as JSON with `links` spliced in.
std::string small(const std::string& links, const std::string& extra_switch = "") {
  return R"({"srv6gw-topology:topology": {
    "switches": {"switch": [
      {"name": "leaf0", "role": "leaf", "sid": "fc00:0:100::e", "usid": "fc00:0:100::"},
      {"name": "leaf1", "role": "leaf", "sid": "fc00:0:101::e", "usid": "fc00:0:101::"},
      {"name": "spine0", "role": "spine", "sid": "fc00:0:102::e", "usid": "fc00:0:102::"})" +
         extra_switch + R"(]},
    "hosts": {"host": [
      {"name": "h0", "address": "10.0.0.1", "gateway": {"source-address": "fc00:0:1000::1",
       "locator": "fc00:0:1000::/48", "decap-sid": "fc00:0:1000::d46"}},
      {"name": "h1", "address": "10.0.0.2", "gateway": {"source-address": "fc00:0:1001::1",
       "locator": "fc00:0:1001::/48", "decap-sid": "fc00:0:1001::d46"}}]},
    "links": {"link": [)" +
         links + R"(]}}})";
}

const std::string kLinks = R"({"a": "h0", "b": "leaf0"}, {"a": "h1", "b": "leaf1"},
    {"a": "leaf0", "b": "spine0", "members": 2}, {"a": "leaf1", "b": "spine0", "members": 2})";

}  // namespace

TEST(Topology, GeneratorsPassTheirChecks) {
  EXPECT_FALSE(check(make_leaf_spine({})));
  EXPECT_FALSE(check(make_fat_tree(fat(4))));
  LeafSpineSpec planes;
  planes.planes = 2;
  planes.leaves = 3;
  planes.spines = 2;
  planes.hosts_per_leaf = 2;
  EXPECT_FALSE(check(make_leaf_spine(planes)));
  const Topology t = make_leaf_spine({});
  EXPECT_EQ(t.hosts().size(), 128u);
  EXPECT_EQ(t.node_count(), 128u + 16u);
  EXPECT_EQ(t.link_count(), 128u + 64u);
  EXPECT_EQ(make_fat_tree(fat(8)).hosts().size(), 128u);
}

TEST(Topology, ExamplesLoadAndRoundTrip) {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(kExamples)) {
    if (e.path().extension() != ".json") continue;
    ++n;
    SCOPED_TRACE(e.path().string());
    const Topology t = ok(load_topology_file(e.path().string()));
    EXPECT_EQ(t.hosts().size(), 128u);
    const std::string json = to_json(t);
    const Topology back = ok(load_topology_json(json));
    EXPECT_EQ(to_json(back), json);
  }
  EXPECT_EQ(n, 3u);
}

TEST(Topology, SmallFileLoads) {
  const Topology t = ok(load_topology_json(small(kLinks)));
  ASSERT_EQ(t.link_count(), 4u);
  const auto l = t.find_link(*t.find_node("leaf0"), *t.find_node("spine0"));
  ASSERT_TRUE(l);
  EXPECT_EQ(t.link(*l).capacity_mbps(), 800000u);
}

TEST(Topology, DegradedLinkStateLoads) {
  const Topology t = ok(load_topology_json(small(
      R"({"a": "h0", "b": "leaf0"}, {"a": "h1", "b": "leaf1"},
    {"a": "leaf0", "b": "spine0", "members": 2, "members-up": 1},
    {"a": "leaf1", "b": "spine0", "members": 2, "capacity-gbps": "200.5"})")));
  EXPECT_EQ(t.link(2).capacity_mbps(), 400000u);
  EXPECT_EQ(t.link(3).capacity_mbps(), 200500u);
}

TEST(Topology, UnknownSwitchIsNamed) {
  const auto e = refused(small(kLinks + R"(, {"a": "leaf0", "b": "spine9"})"));
  EXPECT_EQ(e.path, "/srv6gw-topology:topology/links/link[a='leaf0'][b='spine9']/b");
  EXPECT_NE(e.message.find("unknown switch or host 'spine9'"), std::string::npos) << e.message;
}

TEST(Topology, DuplicateSidIsNamed) {
  const auto e =
      refused(small(kLinks, R"(, {"name": "spine1", "role": "spine", "sid": "fc00:0:100::e"})"));
  EXPECT_EQ(e.path, "/srv6gw-topology:topology/switches/switch[name='spine1']/sid");
  EXPECT_NE(e.message.find("duplicate SID"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("leaf0"), std::string::npos) << e.message;
}

TEST(Topology, AsymmetricLinkIsNamed) {
  const auto e = refused(small(kLinks + R"(, {"a": "spine0", "b": "leaf0", "members": 1})"));
  EXPECT_EQ(e.path, "/srv6gw-topology:topology/links/link[a='spine0'][b='leaf0']");
  EXPECT_NE(e.message.find("asymmetric link"), std::string::npos) << e.message;
}

TEST(Topology, DuplicateLinkIsNamed) {
  const auto e = refused(small(kLinks + R"(, {"a": "spine0", "b": "leaf0", "members": 2})"));
  EXPECT_NE(e.message.find("duplicate link"), std::string::npos) << e.message;
}

TEST(Topology, DisconnectedLeafIsNamed) {
  const auto e =
      refused(small(kLinks, R"(, {"name": "leaf2", "role": "leaf", "sid": "fc00:0:103::e"})"));
  EXPECT_EQ(e.path, "/srv6gw-topology:topology/switches/switch[name='leaf2']");
  EXPECT_NE(e.message.find("disconnected leaf 'leaf2'"), std::string::npos) << e.message;
}

TEST(Topology, UnreachableHostIsNamed) {
  // leaf1 has an uplink, but to a spine that reaches nothing else.
  const auto e = refused(small(
      R"({"a": "h0", "b": "leaf0"}, {"a": "h1", "b": "leaf1"}, {"a": "leaf0", "b": "spine0"},
         {"a": "leaf1", "b": "spine1"})",
      R"(, {"name": "spine1", "role": "spine", "sid": "fc00:0:103::e"})"));
  EXPECT_NE(e.message.find("is not connected to host 'h0'"), std::string::npos) << e.message;
}

TEST(Topology, YangTypeErrorsKeepLibyangPaths) {
  const auto e = refused(small(kLinks + R"(, {"a": "leaf0", "b": "leaf1", "members": 0})"));
  EXPECT_NE(e.path.find("link[a='leaf0'][b='leaf1']/members"), std::string::npos) << e.path;
}

TEST(Topology, MicroSidOutsideTheBlockIsNamed) {
  const auto e =
      refused(small(kLinks, R"(, {"name": "spine1", "role": "spine", "usid": "fc00:1:103::"})"));
  EXPECT_EQ(e.path, "/srv6gw-topology:topology/switches/switch[name='spine1']/usid");
}

TEST(Topology, ApplyRefusesMoreMembersUpThanMembers) {
  Topology t = make_leaf_spine(spec(2, 2, 1));
  const LinkId l = *t.find_link(*t.find_node("leaf0"), *t.find_node("spine0"));
  std::string error;
  EXPECT_FALSE(t.apply({l, LinkState::up, 3, std::nullopt}, &error));
  EXPECT_NE(error.find("leaf0--spine0"), std::string::npos) << error;
  EXPECT_TRUE(t.apply({l, LinkState::up, 1, std::nullopt}));
  EXPECT_EQ(t.link(l).capacity_mbps(), 400000u);
}
