// SPDX-License-Identifier: BSD-3-Clause
// The simulator on lib/pathalg topologies: hand-computed completion times on the 16-host
// leaf-spine (symmetric, one LAG halved under equal spraying, rerouted by recomputed
// weights) and the gateway's per-flow hashing against the path shares measured on the
// emulated fabric (docs/design/fabric.md).
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine.hpp"
#include "pathalg_fabric.hpp"
#include "schemes.hpp"

namespace srv6gw::fabricsim {
namespace {

const std::string kTopologies = FABRICSIM_TOPOLOGIES;

FabricOptions no_latency() {
  FabricOptions o;
  o.hop_latency_s = 0;
  o.frame_bytes = 0;
  return o;
}

double cct(const SimFabric& f, const std::vector<Demand>& d, Scheme s) {
  const Routed r = route(f, d, s);
  return simulate({r.capacity_bps}, r.workload).completion_s;
}

// 16 hosts (4 leaves x 4), 400G NICs, leaf-spine LAGs of 2 x 200G: non-blocking. AlltoAll
// of M bytes per host: b = M/16 per pair, 15 flows per NIC.
constexpr double kMessage = 16.0 * 1024 * 1024;
constexpr double kPair = kMessage / 16;
constexpr double kNic = 400e9;

TEST(PathalgFabric, SymmetricSprayingIsNicBound) {
  const auto fab = make_pathalg_fabric(kTopologies + "/leafspine-16.json", {}, {}, no_latency());
  ASSERT_EQ(fab->hosts().size(), 16u);
  EXPECT_DOUBLE_EQ(fab->nic_bps(), kNic);
  const auto d = alltoall(16, kMessage);
  // Every flow at 400G / 15; a leaf uplink carries 4 hosts x 12 flows / 4 spines = 12 of
  // them: 320G of 400G.
  EXPECT_NEAR(cct(*fab, d, Scheme::spray), kPair * 8 / (kNic / 15), 1e-12);
  EXPECT_NEAR(cct(*fab, d, Scheme::wspray), kPair * 8 / (kNic / 15), 1e-12);
}

TEST(PathalgFabric, HalvedLagUnderSprayingAndRerouted) {
  const std::vector<LinkChange> halved{{"leaf0--spine0", 0.5}};
  const auto stale =
      make_pathalg_fabric(kTopologies + "/leafspine-16.json", {}, halved, no_latency());
  const auto rerouted =
      make_pathalg_fabric(kTopologies + "/leafspine-16.json", halved, halved, no_latency());
  const auto d = alltoall(16, kMessage);
  // Equal spraying: the 48 flows leaving leaf0 for other leaves put 1/4 each on
  // leaf0->spine0, now 200G: 12 r = 200G, r = 16.67G < 400G/15 (and the same into leaf0).
  EXPECT_NEAR(cct(*stale, d, Scheme::spray), kPair * 8 / (200e9 / 12), 1e-12);
  // Recomputed weights 1:2:2:2 for paths across the halved LAG: 1/7 of 48 flows on 200G
  // allows 29.2G > 400G/15: back to the NIC bound.
  const auto paths = rerouted->paths(0, 4);  // h0 (leaf0) -> h4 (leaf1)
  ASSERT_EQ(paths.size(), 4u);
  EXPECT_DOUBLE_EQ(paths[0].weight * 2, paths[1].weight);
  EXPECT_NEAR(cct(*rerouted, d, Scheme::wspray), kPair * 8 / (kNic / 15), 1e-12);
}

TEST(PathalgFabric, HashReproducesTheEmulatedFabricsPathShares) {
  // docs/design/fabric.md: 16 QPs (DestQP 0x100..) from 10.0.0.1 to 10.0.1.1 over three equal
  // spines put 8 / 2 / 6 QPs on spines 1 / 2 / 3 (gateway path shares 0.50 / 0.13 / 0.37);
  // 8 QPs: 4 / 2 / 2 (0.50 / 0.25 / 0.25).
  const auto fab = make_pathalg_fabric(kTopologies + "/emulated-3spine.json", {}, {}, {});
  for (const auto& [qps, expect] :
       {std::pair<uint32_t, std::array<int, 3>>{16, {8, 2, 6}}, {8, {4, 2, 2}}}) {
    std::vector<Demand> d;
    for (uint32_t q = 0; q < qps; ++q) d.push_back({0, 1, 0x100 + q, 1.0, {}, 0});
    const Routed r = route(*fab, d, Scheme::hash);
    std::array<int, 3> count{};
    for (uint32_t p : r.path_of_demand) ++count.at(p);
    EXPECT_EQ(count, expect) << qps << " QPs";
  }
}

TEST(PathalgFabric, PlacementComesFromThePathAlgorithmModule) {
  const auto fab = make_pathalg_fabric(kTopologies + "/leafspine-16.json", {}, {}, no_latency());
  const auto d = alltoall(16, kMessage);
  const Routed r = route(*fab, d, Scheme::placement);
  // Single-path per flow, and as good as spraying on the symmetric fabric.
  for (uint32_t p : r.path_of_demand) ASSERT_NE(p, UINT32_MAX);
  EXPECT_NEAR(simulate({r.capacity_bps}, r.workload).completion_s, kPair * 8 / (kNic / 15), 1e-9);
}

TEST(PathalgFabric, BalancedCountsEachFirstHopAcrossAllPoliciesOfAGateway) {
  // The gateway's balanced mode keys load by first SID across all policies of a worker:
  // host 0's 12 flows to the other leaves (12 policies, 4 paths each) go 3 to each spine,
  // every 4 consecutive ones (NCCL's order: peers 1, 2, ..., 15) over the 4 spines; which
  // spine each takes among the equally loaded ones is the flow hash's choice.
  const auto fab = make_pathalg_fabric(kTopologies + "/leafspine-16.json", {}, {}, no_latency());
  const auto d = alltoall(16, kMessage);
  const Routed r = route(*fab, d, Scheme::balanced);
  std::map<std::string, int> per_spine;
  std::vector<std::string> order;
  for (size_t i = 0; i < d.size(); ++i) {
    if (d[i].src != 0 || d[i].dst < 4) continue;  // hosts 1..3 share host 0's leaf
    const auto paths = fab->paths(d[i].src, d[i].dst);
    ASSERT_LT(r.path_of_demand[i], paths.size());
    const std::string first = net::to_string(paths[r.path_of_demand[i]].sids.front());
    ++per_spine[first];
    order.push_back(first);
  }
  ASSERT_EQ(per_spine.size(), 4u);
  for (const auto& [sid, n] : per_spine) EXPECT_EQ(n, 3) << sid;
  for (size_t k = 0; k + 4 <= order.size(); k += 4)
    EXPECT_EQ(std::set<std::string>(order.begin() + k, order.begin() + k + 4).size(), 4u) << k;
}

TEST(PathalgFabric, UnknownLinkIsRefusedByName) {
  try {
    const std::vector<LinkChange> bad{{"leaf0--spine9", 0.5}};
    make_pathalg_fabric(kTopologies + "/leafspine-16.json", {}, bad, {});
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("leaf0--spine9"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace srv6gw::fabricsim
