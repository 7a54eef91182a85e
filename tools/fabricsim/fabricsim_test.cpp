// SPDX-License-Identifier: BSD-3-Clause
// The simulator on cases whose answers are computed by hand, and the max-min solver against
// the definition of max-min fairness on random instances.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "collectives.hpp"
#include "engine.hpp"
#include "maxmin.hpp"
#include "schemes.hpp"

namespace srv6gw::fabricsim {
namespace {

std::vector<LinkUse> on(std::initializer_list<uint32_t> links) {
  std::vector<LinkUse> v;
  for (uint32_t l : links) v.push_back({l, 1.0});
  return v;
}

TEST(MaxMin, OneBottleneckGivesTheRestToTheOther) {
  // A crosses links 0 and 1, B crosses 1 and 2; link 2 (3 units) limits B, A takes the rest
  // of link 1.
  FlowSet fs;
  fs.add(on({0, 1}));
  fs.add(on({1, 2}));
  const auto r = max_min_rates({10, 10, 3}, fs);
  EXPECT_DOUBLE_EQ(r[0], 7.0);
  EXPECT_DOUBLE_EQ(r[1], 3.0);
}

TEST(MaxMin, TwoFlowsOnOneLinkSplitIt) {
  FlowSet fs;
  fs.add(on({0}));
  fs.add(on({0}));
  const auto r = max_min_rates({10}, fs);
  EXPECT_DOUBLE_EQ(r[0], 5.0);
  EXPECT_DOUBLE_EQ(r[1], 5.0);
}

TEST(MaxMin, TextbookExample) {
  // Bertsekas & Gallager: links of capacity 1; flow 0 crosses links 0,1,2, flows 1, 2 and 3
  // cross link 0, 1 and 2 alone... here: f0 on {0,1}, f1 on {0}, f2 on {1}, f3 on {1}.
  // Link 1 carries three flows: 1/3 each; f1 then takes link 0's remaining 2/3.
  FlowSet fs;
  fs.add(on({0, 1}));
  fs.add(on({0}));
  fs.add(on({1}));
  fs.add(on({1}));
  const auto r = max_min_rates({1, 1}, fs);
  EXPECT_NEAR(r[0], 1.0 / 3, 1e-12);
  EXPECT_NEAR(r[1], 2.0 / 3, 1e-12);
  EXPECT_NEAR(r[2], 1.0 / 3, 1e-12);
  EXPECT_NEAR(r[3], 1.0 / 3, 1e-12);
}

TEST(MaxMin, HalvedLinkUnderSprayingLimitsEverySprayedFlow) {
  // Two paths between one pair of leaves: path 0 over link 1 (capacity 10), path 1 over
  // link 2 (halved to 5). Hosts' links (0, 3) are 20. Two flows, each sprayed half/half:
  // 0.5 * (r + r) <= 5 on the halved link gives r = 5: 10 in total although the paths
  // carry 15.
  FlowSet equal;
  const std::vector<LinkUse> split{{0, 1.0}, {1, 0.5}, {2, 0.5}, {3, 1.0}};
  equal.add(split);
  equal.add(split);
  const auto r = max_min_rates({20, 10, 5, 20}, equal);
  EXPECT_DOUBLE_EQ(r[0], 5.0);
  EXPECT_DOUBLE_EQ(r[1], 5.0);
  // Weighted by capacity (2/3 on link 1, 1/3 on link 2): both paths fill, 7.5 each.
  FlowSet weighted;
  const std::vector<LinkUse> wsplit{{0, 1.0}, {1, 2.0 / 3}, {2, 1.0 / 3}, {3, 1.0}};
  weighted.add(wsplit);
  weighted.add(wsplit);
  const auto rw = max_min_rates({20, 10, 5, 20}, weighted);
  EXPECT_NEAR(rw[0], 7.5, 1e-12);
  EXPECT_NEAR(rw[1], 7.5, 1e-12);
}

TEST(MaxMin, AggregatedFlowsGetTheSameRatesAsExpanded) {
  FlowSet expanded, aggregated;
  for (int i = 0; i < 3; ++i) expanded.add(on({0, 1}));
  expanded.add(on({1}));
  aggregated.add(on({0, 1}), 3.0);
  aggregated.add(on({1}));
  const auto re = max_min_rates({2, 8}, expanded);
  const auto ra = max_min_rates({2, 8}, aggregated);
  EXPECT_NEAR(ra[0], re[0], 1e-12);
  EXPECT_NEAR(ra[1], re[3], 1e-12);
  EXPECT_NEAR(ra[0], 2.0 / 3, 1e-12);
  EXPECT_NEAR(ra[1], 8 - 2.0, 1e-12);
}

// Max-min fairness by definition: the allocation is feasible, and every flow crosses a
// saturated link on which no flow has a higher rate (its bottleneck).
TEST(MaxMin, RandomInstancesSatisfyTheDefinition) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const uint32_t n_links = 2 + rng() % 8;
    std::vector<double> cap(n_links);
    for (double& c : cap) c = 1 + rng() % 20;
    FlowSet fs;
    const uint32_t n_flows = 1 + rng() % 12;
    for (uint32_t f = 0; f < n_flows; ++f) {
      std::vector<LinkUse> u;
      for (uint32_t l = 0; l < n_links; ++l)
        if (rng() % 3 == 0) u.push_back({l, (rng() % 2) ? 1.0 : 0.5});
      if (u.empty()) u.push_back({uint32_t(rng() % n_links), 1.0});
      fs.add(u, double(1 + rng() % 3));
    }
    const auto r = max_min_rates(cap, fs);
    std::vector<double> load(n_links, 0.0);
    for (uint32_t f = 0; f < n_flows; ++f)
      for (const LinkUse& u : fs.links_of(f)) load[u.link] += fs.count[f] * u.share * r[f];
    for (uint32_t l = 0; l < n_links; ++l) ASSERT_LE(load[l], cap[l] * (1 + 1e-9)) << trial;
    for (uint32_t f = 0; f < n_flows; ++f) {
      ASSERT_GT(r[f], 0);
      bool has_bottleneck = false;
      for (const LinkUse& u : fs.links_of(f)) {
        if (load[u.link] < cap[u.link] * (1 - 1e-9)) continue;
        bool highest = true;
        for (uint32_t g = 0; g < n_flows; ++g)
          for (const LinkUse& v : fs.links_of(g))
            if (v.link == u.link && r[g] > r[f] * (1 + 1e-9)) highest = false;
        has_bottleneck |= highest;
      }
      EXPECT_TRUE(has_bottleneck) << "trial " << trial << " flow " << f;
    }
  }
}

TEST(Engine, TwoFlowsOnOneLinkFinishAtHandComputedTimes) {
  // 8 bit/s link; 1 byte and 2 bytes: 4 bit/s each until the first is done at t = 2 s, then
  // the second has 8 bits left alone at 8 bit/s: done at t = 3 s. Latency 0.5 s on top.
  Workload w;
  w.add(on({0}), 1.0, 0.5);
  w.add(on({0}), 2.0, 0.5);
  const SimResult r = simulate({{8.0}}, w);
  EXPECT_DOUBLE_EQ(r.flows[0].finish, 2.0);
  EXPECT_DOUBLE_EQ(r.flows[1].finish, 3.0);
  EXPECT_DOUBLE_EQ(r.flows[1].delivered, 3.5);
  EXPECT_DOUBLE_EQ(r.completion_s, 3.5);
  EXPECT_EQ(r.events, 2u);
}

TEST(Engine, DependentFlowStartsAfterDelivery) {
  Workload w;
  const uint32_t a = w.add(on({0}), 1.0, 1.0);  // 8 bits at 8 bit/s: finish 1, deliver 2
  w.add(on({0}), 1.0, 1.0, 1.0, {a});           // starts at 2, finishes 3, delivered 4
  const SimResult r = simulate({{8.0}}, w);
  EXPECT_DOUBLE_EQ(r.flows[1].start, 2.0);
  EXPECT_DOUBLE_EQ(r.completion_s, 4.0);
}

TEST(Engine, HalvedLinkUnderSprayingCompletionTime) {
  // The MaxMin case above with 10 bytes per flow: sprayed equally, 80 bits at 5 bit/s = 16 s;
  // weighted by capacity, 80 / 7.5.
  Workload eq, wt;
  const std::vector<LinkUse> split{{0, 1.0}, {1, 0.5}, {2, 0.5}, {3, 1.0}};
  const std::vector<LinkUse> wsplit{{0, 1.0}, {1, 2.0 / 3}, {2, 1.0 / 3}, {3, 1.0}};
  for (int i = 0; i < 2; ++i) {
    eq.add(split, 10.0, 0.0);
    wt.add(wsplit, 10.0, 0.0);
  }
  EXPECT_NEAR(simulate({{20, 10, 5, 20}}, eq).completion_s, 16.0, 1e-9);
  EXPECT_NEAR(simulate({{20, 10, 5, 20}}, wt).completion_s, 80.0 / 7.5, 1e-9);
}

TEST(Collectives, AlltoAllAndRingShapes) {
  const auto a2a = alltoall(4, 400.0, 2);
  EXPECT_EQ(a2a.size(), 4u * 3 * 2);
  for (const Demand& d : a2a) {
    EXPECT_NE(d.src, d.dst);
    EXPECT_DOUBLE_EQ(d.bytes, 50.0);
  }
  EXPECT_DOUBLE_EQ(nic_bound_s(a2a, 4, 8.0), 300.0);  // 300 bytes out of each host at 1 B/s
  const auto ring = ring_allreduce(4, 400.0);
  EXPECT_EQ(ring.size(), 2u * 3 * 4);
  EXPECT_TRUE(ring[0].after.empty());
  EXPECT_EQ(ring[4 + 1].after, (std::vector<uint32_t>{0, 1}));
}

TEST(Collectives, MoeHotExpertsGetTheirShare) {
  MoeParams p;
  p.hot_fraction = 0.25;
  p.hot_share = 0.6;
  const auto d = moe_alltoall(16, 1000.0, p);
  const auto hot = moe_hot_experts(16, p);
  ASSERT_EQ(hot.size(), 4u);
  for (uint32_t s = 0; s < 16; ++s) {
    double to_hot = 0, total = 0;
    for (const Demand& x : d)
      if (x.src == s) {
        total += x.bytes;
        if (std::find(hot.begin(), hot.end(), x.dst) != hot.end()) to_hot += x.bytes;
      }
    EXPECT_NEAR(total, 1000.0, 1e-9);
    EXPECT_NEAR(to_hot, 600.0, 1e-9);
  }
}

// Two leaves (one host each) joined by two spines; link capacities given per leaf-spine
// LAG. A fixture for the schemes, not a path algorithm: placement is left to lib/pathalg's
// tests and the pathalg-backed cases below.
class TwoSpineFabric : public SimFabric {
 public:
  // links: 0 h0->L0, 1 L0->h0, 2 h1->L1, 3 L1->h1, then per spine s: L0->Ss, Ss->L1, L1->Ss,
  // Ss->L0 (4 + 4s ..).
  TwoSpineFabric(double nic, double lag0, double lag1, double w0, double w1) {
    for (int i = 0; i < 4; ++i) add("host" + std::to_string(i), nic);
    for (int s = 0; s < 2; ++s)
      for (int i = 0; i < 4; ++i) add("spine" + std::to_string(s), s == 0 ? lag0 : lag1);
    hosts_ = {{"h0", *net::parse_ip("10.0.0.1")}, {"h1", *net::parse_ip("10.0.1.1")}};
    nic_ = nic;
    for (int s = 0; s < 2; ++s) {
      const uint32_t b = 4 + 4 * uint32_t(s);
      const double w = s == 0 ? w0 : w1;
      // Segment lists: the spine's SID, then the destination leaf's.
      const net::Ipv6Addr spine = *net::parse_ipv6("fc00:0:" + std::to_string(s + 1) + "::");
      fwd_.push_back(
          {{0, b, b + 1, 3}, w, {spine, *net::parse_ipv6("fc00:1:1::")}, uint32_t(s + 1)});
      rev_.push_back(
          {{2, b + 2, b + 3, 1}, w, {spine, *net::parse_ipv6("fc00:1::")}, uint32_t(s + 1)});
    }
  }
  const SimLinks& links() const override { return links_; }
  const std::vector<SimHost>& hosts() const override { return hosts_; }
  double nic_bps() const override { return nic_; }
  std::span<const SimPath> paths(uint32_t src, uint32_t) const override {
    return src == 0 ? fwd_ : rev_;
  }
  std::vector<uint32_t> place(std::span<const Demand>) const override {
    throw std::logic_error("placement belongs to lib/pathalg");
  }

 private:
  void add(std::string name, double cap) {
    links_.name.push_back(std::move(name));
    links_.capacity_bps.push_back(cap);
    links_.latency_s.push_back(0.0);
  }
  SimLinks links_;
  std::vector<SimHost> hosts_;
  std::vector<SimPath> fwd_, rev_;
  double nic_ = 0;
};

double cct(const SimFabric& fab, const std::vector<Demand>& d, Scheme s) {
  const Routed r = route(fab, d, s);
  return simulate({r.capacity_bps}, r.workload).completion_s;
}

TEST(Schemes, HalvedLagUnderEqualAndWeightedSpraying) {
  // NIC 10, LAGs 5 + 5 (non-blocking), spine 1's LAG halved to 2.5. Two hosts, AlltoAll of
  // 20 bytes: 10 bytes (80 bits) each way. Equal spraying: r/2 <= 2.5, r = 5, 16 s.
  // Capacity-weighted (2:1): 2r/3 <= 5 and r/3 <= 2.5, r = 7.5, 80/7.5 s.
  const auto d = alltoall(2, 20.0);
  TwoSpineFabric equal(10, 5, 2.5, 1, 1), weighted(10, 5, 2.5, 2, 1), healthy(10, 5, 5, 1, 1);
  EXPECT_NEAR(cct(equal, d, Scheme::spray), 16.0, 1e-9);
  EXPECT_NEAR(cct(weighted, d, Scheme::wspray), 80.0 / 7.5, 1e-9);
  EXPECT_NEAR(cct(healthy, d, Scheme::spray), 8.0, 1e-9);  // NIC-bound
  // One path per flow: the best single path carries 5.
  EXPECT_NEAR(cct(weighted, d, Scheme::balanced), 16.0, 1e-9);
}

TEST(Schemes, BalancedCountsFlowsPerLoadGroupRelativeToWeight) {
  TwoSpineFabric f(10, 5, 5, 2, 1);
  const auto d = alltoall(2, 12.0, 6);  // 6 QPs each way
  const Routed r = route(f, d, Scheme::balanced);
  uint32_t on0 = 0;
  for (size_t i = 0; i < d.size(); ++i)
    if (d[i].src == 0) on0 += r.path_of_demand[i] == 0;
  EXPECT_EQ(on0, 4u);  // 2:1 of 6
  // Identical flows on one path are one solver entry.
  EXPECT_EQ(r.workload.flows.size(), 4u);
}

TEST(Schemes, HashUsesTheGatewayBucketTableShares) {
  TwoSpineFabric f(10, 5, 5, 3, 1);
  const auto d = alltoall(2, 1.0, 4000);
  const Routed r = route(f, d, Scheme::hash, {.hash_seed = 42});
  double on0 = 0;
  for (uint32_t p : r.path_of_demand) on0 += p == 0;
  EXPECT_NEAR(on0 / double(d.size()), 0.75, 0.03);
  // Another seed draws other QP numbers: another assignment.
  const Routed r2 = route(f, d, Scheme::hash, {.hash_seed = 43});
  EXPECT_NE(r.path_of_demand, r2.path_of_demand);
}

}  // namespace
}  // namespace srv6gw::fabricsim
