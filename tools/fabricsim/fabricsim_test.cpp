// SPDX-License-Identifier: BSD-3-Clause
// The simulator on cases whose answers are computed by hand, and the max-min solver against
// the definition of max-min fairness on random instances.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "collectives.hpp"
#include "engine.hpp"
#include "maxmin.hpp"

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

}  // namespace
}  // namespace srv6gw::fabricsim
