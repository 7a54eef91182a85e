// SPDX-License-Identifier: BSD-3-Clause
// balanced selection mode on a fake clock (1 tick = 1 us): placement within one flow of the
// exact share (equal and 3:2:1 weights), load groups shared across policies, idle expiry,
// engine factor changes, table overflow, the bound with several workers, and the
// measurement behind the choice of active flows over recent bytes as the load.
#include <gtest/gtest.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "config_builder.hpp"
#include "policy/compiled_policy.hpp"
#include "policy/selection.hpp"

namespace srv6gw::policy {
namespace {

using config::SelectionMode;

constexpr uint32_t kLongGapUs = config::kMaxFlowletGapUs;  // nothing expires in a test

std::unique_ptr<const CompiledPolicy> compile(const config::Policy& p) {
  config::ConfigError err;
  CompileEnv env{testing::v6("fc00:ffff::1"), 64, 0};
  auto cp = compile_policy(p, env, {}, err);
  EXPECT_NE(cp, nullptr) << err.path << ": " << err.message;
  return cp;
}

// One list per weight; list i leaves by first hop fc00:<first_hop_base + i>::1 (its default
// load group) toward `destination_sid`.
config::Policy balanced(const std::string& name, std::vector<uint32_t> weights,
                        uint32_t idle_gap_us = kLongGapUs, unsigned first_hop_base = 0x100,
                        const char* destination_sid = "fc00:d::1", uint16_t path_id_base = 100) {
  std::vector<config::SegmentList> lists;
  for (size_t i = 0; i < weights.size(); ++i) {
    char first[32];
    std::snprintf(first, sizeof first, "fc00:%x::1", unsigned(first_hop_base + i));
    lists.push_back(testing::segment_list("sl" + std::to_string(i), uint16_t(path_id_base + i),
                                          weights[i], {first, destination_sid}));
  }
  config::Policy p = testing::policy(name, SelectionMode::balanced, lists);
  p.idle_gap_us = idle_gap_us;
  return p;
}

uint32_t hash_of(uint32_t qp, const char* dst = "10.0.0.2") {
  return flow_hash(testing::ip("10.0.0.1"), testing::ip(dst), qp);
}

// Active flows per path of policy `p` in `st` (what the gateway reports per path).
std::vector<unsigned> active_per_path(const CompiledPolicy& p, const SelectorState& st,
                                      uint64_t now) {
  std::vector<unsigned> n(p.paths.size(), 0);
  const uint32_t lineage_tag = (p.lineage & 0xFFFFFFu) << 8;
  for (uint32_t k = 0; k < st.n_occupied; ++k) {
    const uint32_t index = st.occupied[k];
    const BalancedEntry& e = st.balanced[index / kBalancedWays].way[index % kBalancedWays];
    if ((e.tag & ~0xFFu) == lineage_tag && ((now - e.stamp) & kStampTscMask) <= p.idle_gap_tsc)
      ++n[e.tag & 0xFF];
  }
  return n;
}

TEST(Balanced, EqualPathsWithinOneFlowOfTheShare) {
  for (unsigned k : {1u, 2u, 3u, 5u, 8u, 16u}) {
    auto p = compile(balanced("p", std::vector<uint32_t>(k, 1)));
    for (unsigned n : {1u, 7u, 100u, 1000u, 10000u}) {
      SelectorState st(1);
      std::vector<uint8_t> first(n);
      std::vector<unsigned> count(k, 0);
      uint64_t now = 1;
      for (uint32_t qp = 0; qp < n; ++qp) {
        first[qp] = select_path(*p, 0, hash_of(qp), 0x0a, now++, st, 1000);
        ASSERT_LT(first[qp], k);
        ++count[first[qp]];
      }
      EXPECT_EQ(st.balanced_overflow, 0u) << n << " flows";
      for (unsigned i = 0; i < k; ++i) {
        EXPECT_LE(std::abs(double(count[i]) - double(n) / k), 1.0)
            << n << " flows over " << k << " paths: path " << i << " has " << count[i];
      }
      EXPECT_EQ(active_per_path(*p, st, now), count);
      // Sticky: every flow's later packets stay where it was placed.
      for (uint32_t qp = 0; qp < n; ++qp)
        ASSERT_EQ(select_path(*p, 0, hash_of(qp), 0x0a, now++, st, 1000), first[qp]);
    }
  }
}

TEST(Balanced, WeightsThreeTwoOneWithinOneFlowAtEveryStep) {
  auto p = compile(balanced("p", {3, 2, 1}));
  SelectorState st(1);
  std::vector<unsigned> count(3, 0);
  for (uint32_t n = 1; n <= 3000; ++n) {
    ++count[select_path(*p, 0, hash_of(n), 0x0a, n, st, 1000)];
    for (unsigned i = 0; i < 3; ++i) {
      const double exact = double(n) * (3 - i) / 6.0;
      ASSERT_LE(std::abs(count[i] - exact), 1.0) << "after " << n << " flows, path " << i;
    }
  }
  EXPECT_EQ(count, (std::vector<unsigned>{1500, 1000, 500}));
}

TEST(Balanced, PoliciesSharingFirstHopsBalancePerGroup) {
  // Two destinations over the same three spines: 5 QPs to the first, then 4 to the second.
  // Balanced per policy this would give 2+2, 2+1, 1+1 = 4/3/2 per spine; per group, 3/3/3.
  auto a = compile(balanced("a", {1, 1, 1}, kLongGapUs, 0x200, "fc00:d1::1", 100));
  auto b = compile(balanced("b", {1, 1, 1}, kLongGapUs, 0x200, "fc00:d2::1", 200));
  ASSERT_EQ(a->load_group, b->load_group);
  SelectorState st(2);
  std::vector<unsigned> spine(3, 0);
  uint64_t now = 1;
  for (uint32_t qp = 0; qp < 5; ++qp)
    ++spine[select_path(*a, 0, hash_of(qp, "10.0.1.1"), 0, now++, st)];
  for (uint32_t qp = 0; qp < 4; ++qp)
    ++spine[select_path(*b, 1, hash_of(qp, "10.0.2.1"), 0, now++, st)];
  EXPECT_EQ(spine, (std::vector<unsigned>{3, 3, 3}));
  for (unsigned i = 0; i < 3; ++i) EXPECT_EQ(st.groups[a->load_group[i]].active, 3u);

  // The load-group leaf: lists with different first SIDs counted together.
  config::Policy c_cfg = balanced("c", {1, 1}, kLongGapUs, 0x300, "fc00:d3::1", 300);
  config::Policy d_cfg = balanced("d", {1, 1}, kLongGapUs, 0x310, "fc00:d4::1", 400);
  for (auto* cfg : {&c_cfg, &d_cfg}) {
    cfg->segment_lists[0].load_group = "uplink-x";
    cfg->segment_lists[1].load_group = "uplink-y";
  }
  auto c = compile(c_cfg);
  auto d = compile(d_cfg);
  EXPECT_EQ(c->load_group, d->load_group);
  EXPECT_NE(c->load_group[0], a->load_group[0]);
  std::vector<unsigned> uplink(2, 0);
  for (uint32_t qp = 0; qp < 3; ++qp)
    ++uplink[select_path(*c, 0, hash_of(qp, "10.0.3.1"), 0, now++, st)];
  for (uint32_t qp = 0; qp < 3; ++qp)
    ++uplink[select_path(*d, 1, hash_of(qp, "10.0.4.1"), 0, now++, st)];
  EXPECT_EQ(uplink, (std::vector<unsigned>{3, 3}));
}

TEST(Balanced, IdleFlowsStopCountingAndComeBackOnTheLeastLoadedPath) {
  constexpr uint32_t kGap = 100;
  auto p = compile(balanced("p", {1, 1}, kGap));
  SelectorState st(1);
  std::vector<uint8_t> path(10);
  uint64_t now = 1000;
  for (uint32_t qp = 0; qp < 10; ++qp) path[qp] = select_path(*p, 0, hash_of(qp), 0, now, st, 1000);
  ASSERT_EQ(std::count(path.begin(), path.end(), 0), 5);
  // The flows on path 0 keep sending every gap / 2 and never move; those on path 1 stop.
  for (int step = 0; step < 4; ++step) {
    now += kGap / 2;
    for (uint32_t qp = 0; qp < 10; ++qp) {
      if (path[qp] == 0) {
        ASSERT_EQ(select_path(*p, 0, hash_of(qp), 0, now, st, 1000), 0);
      }
    }
  }
  EXPECT_EQ(active_per_path(*p, st, now), (std::vector<unsigned>{5, 0}));
  // Ten new flows: the idle ones are released first, so path 1 (0 active) takes the first
  // five, then the two alternate (ties to the fewer recent bytes: path 1).
  unsigned new_on_1 = 0;
  for (uint32_t qp = 100; qp < 110; ++qp)
    new_on_1 += select_path(*p, 0, hash_of(qp), 0, now, st, 1000);
  EXPECT_EQ(new_on_1, 8u);
  EXPECT_EQ(st.groups[p->load_group[0]].active + st.groups[p->load_group[1]].active, 15u);
  // A flow back after its gap is placed afresh: path 0 now carries 7, path 1 8.
  EXPECT_EQ(select_path(*p, 0, hash_of(path[0] == 1 ? 0 : 1), 0, now + 1, st, 1000), 0);
}

TEST(Balanced, EngineFactorsSteerNewPlacementsAndTakenOutPathsEmptyAtTheGap) {
  constexpr uint32_t kGap = 100;
  auto p = compile(balanced("p", {1, 1, 1}, kGap));
  SelectorState st(1);
  std::vector<uint8_t> path(30);
  uint64_t now = 1;
  for (uint32_t qp = 0; qp < 30; ++qp) path[qp] = select_path(*p, 0, hash_of(qp), 0, now, st);
  config::ConfigError err;
  auto out = with_factors(*p, std::vector<double>{1.0, 1.0, 0.0}, err);  // list 2 taken out
  ASSERT_NE(out, nullptr) << err.message;
  ASSERT_EQ(out->lineage, p->lineage);
  // Active flows on list 2 stay on it (no reordering, nothing dropped) ...
  for (uint32_t qp = 0; qp < 30; ++qp)
    ASSERT_EQ(select_path(*out, 0, hash_of(qp), 0, now + 10, st), path[qp]);
  // ... new flows avoid it ...
  for (uint32_t qp = 100; qp < 120; ++qp)
    EXPECT_NE(select_path(*out, 0, hash_of(qp), 0, now + 20, st), 2);
  // ... and after a gap the flows of list 2 move to the other lists.
  for (uint32_t qp = 0; qp < 30; ++qp) {
    if (path[qp] == 2) {
      EXPECT_NE(select_path(*out, 0, hash_of(qp), 0, now + 20 + kGap + 1, st), 2);
    }
  }

  // A lowered factor: weights in force 2:1:2 (factor 0.5 on list 1) share 50 new flows 20/10/20.
  auto half = with_factors(*p, std::vector<double>{1.0, 0.5, 1.0}, err);
  ASSERT_NE(half, nullptr) << err.message;
  SelectorState fresh(1);
  std::vector<unsigned> count(3, 0);
  for (uint32_t qp = 0; qp < 50; ++qp) ++count[select_path(*half, 0, hash_of(qp), 0, 1, fresh)];
  EXPECT_EQ(count, (std::vector<unsigned>{20, 10, 20}));
}

// A list that goes down (probes lost, a controller's path-down) releases its flows on their
// next packet; a list merely taken out for congestion keeps them until their idle gap.
TEST(Balanced, FlowsOnADownListMoveAtOnceAndOnAnExcludedListAtTheirGap) {
  constexpr uint32_t kGap = 100;
  auto p = compile(balanced("p", {1, 1, 1}, kGap));
  config::ConfigError err;
  auto excluded = with_factors(*p, std::vector<double>{1.0, 1.0, 0.0}, err);
  ASSERT_NE(excluded, nullptr) << err.message;
  auto down = with_factors(*p, std::vector<double>{1.0, 1.0, 0.0}, err, uint64_t(1) << 2);
  ASSERT_NE(down, nullptr) << err.message;
  EXPECT_EQ(excluded->down_mask, 0u);
  EXPECT_EQ(down->down_mask, uint64_t(1) << 2);
  EXPECT_EQ(down->lineage, p->lineage);
  // A down bit on a list still in service is ignored (it would re-place every packet).
  auto kept = with_factors(*p, std::vector<double>{1.0, 1.0, 1.0}, err, uint64_t(1) << 2);
  ASSERT_NE(kept, nullptr) << err.message;
  EXPECT_EQ(kept->down_mask, 0u);

  for (const bool is_down : {false, true}) {
    SCOPED_TRACE(is_down ? "down" : "excluded");
    const CompiledPolicy& out = is_down ? *down : *excluded;
    SelectorState st(1);
    std::vector<uint8_t> path(30);
    for (uint32_t qp = 0; qp < 30; ++qp) path[qp] = select_path(*p, 0, hash_of(qp), 0, 1, st);
    ASSERT_EQ(active_per_path(*p, st, 2), (std::vector<unsigned>{10, 10, 10}));
    // The next packet of each flow, well within its gap.
    std::vector<uint8_t> next(30);
    for (uint32_t qp = 0; qp < 30; ++qp) next[qp] = select_path(out, 0, hash_of(qp), 0, 10, st);
    for (uint32_t qp = 0; qp < 30; ++qp) {
      if (path[qp] != 2 || !is_down) {
        EXPECT_EQ(next[qp], path[qp]) << "qp " << qp;
      } else {
        EXPECT_NE(next[qp], 2) << "qp " << qp;
      }
    }
    // Once moved, a flow stays on its new list; the moved ones split evenly.
    for (uint32_t qp = 0; qp < 30; ++qp)
      ASSERT_EQ(select_path(out, 0, hash_of(qp), 0, 20, st), next[qp]) << "qp " << qp;
    if (is_down) {
      EXPECT_EQ(active_per_path(out, st, 21), (std::vector<unsigned>{15, 15, 0}));
      EXPECT_EQ(st.groups[out.load_group[2]].active, 0u);
    }
    // After a gap the excluded list's flows move too.
    for (uint32_t qp = 0; qp < 30; ++qp)
      EXPECT_NE(select_path(out, 0, hash_of(qp), 0, 20 + kGap + 1, st), 2) << "qp " << qp;
  }
}

TEST(Balanced, FullSetsFallBackToHashingAndNeverEvictAnActiveFlow) {
  auto p = compile(balanced("p", {1, 1, 1, 1}, 100));
  SelectorState st(1);
  // 16 hashes with the same two candidate sets (bits 0..27 equal): 8 ways between them.
  auto h = [](uint32_t k) { return 0x0123456u | k << 28; };
  std::vector<uint8_t> path(16);
  for (uint32_t k = 0; k < 16; ++k) path[k] = select_path(*p, 0, h(k), 0, 10, st);
  EXPECT_EQ(st.balanced_overflow, 8u);
  for (uint32_t k = 8; k < 16; ++k) EXPECT_EQ(path[k], select_by_flow(*p, h(k)));
  // The eight placed flows keep their paths, the overflow stays on its hash.
  for (int round = 0; round < 3; ++round)
    for (uint32_t k = 0; k < 16; ++k)
      ASSERT_EQ(select_path(*p, 0, h(k), 0, 20 + round, st), path[k]);
  EXPECT_EQ(st.balanced_overflow, 8u + 3 * 8u);
  std::vector<unsigned> placed(4, 0);
  for (uint32_t k = 0; k < 8; ++k) ++placed[path[k]];
  EXPECT_EQ(placed, (std::vector<unsigned>{2, 2, 2, 2}));
  // Once the placed flows are idle past the gap, a waiting flow gets a way.
  select_path(*p, 0, h(15), 0, 200, st);
  EXPECT_EQ(st.balanced_overflow, 8u + 3 * 8u);
}

// The table (4096 sets of 4 ways, 256 KB) at and beyond 10k concurrent flows: moving a
// flow to its other candidate set makes room where first-fit two-choice overflowed (105 of
// 10,000 flows of EqualPathsWithinOneFlowOfTheShare), and a moved flow keeps its list.
TEST(Balanced, TenThousandFlowsFitAndMovedFlowsKeepTheirPaths) {
  auto p = compile(balanced("p", {1, 1, 1, 1}));
  std::mt19937 random(13);
  for (unsigned n : {10000u, 12000u, 14000u, 16000u}) {
    SelectorState st(1);
    std::vector<uint32_t> hashes(n);
    std::vector<uint8_t> path(n);
    for (uint32_t i = 0; i < n; ++i) {
      hashes[i] = uint32_t(random());
      path[i] = select_path(*p, 0, hashes[i], 0, 1, st, 1000);
    }
    unsigned spilled = 0;
    for (uint32_t k = 0; k < st.n_occupied; ++k)
      spilled += st.occupied[k] / kBalancedWays !=
                 balanced_first_set(balanced_entry(st, st.occupied[k]).flow_hash);
    std::printf("balanced table, %u flows: %" PRIu64 " placed by hash, %u in their second set\n", n,
                st.balanced_overflow, spilled);
    if (n == 10000) {
      EXPECT_EQ(st.balanced_overflow, 0u);
    }
    EXPECT_EQ(st.n_occupied + st.balanced_overflow, n);
    const uint64_t overflow = st.balanced_overflow;
    for (uint32_t i = 0; i < n; ++i)
      ASSERT_EQ(select_path(*p, 0, hashes[i], 0, 2, st, 1000), path[i])
          << n << " flows, flow " << i;
    EXPECT_EQ(st.balanced_overflow, 2 * overflow);  // the overflow stays on its hash
  }
}

TEST(Balanced, SeveralWorkersStayWithinOneFlowPerWorker) {
  // Each worker balances its own flows within one; globally a path is at most W flows off
  // (W = workers): with RSS spreading flows, per-path totals differ by at most W.
  constexpr unsigned kWorkers = 4, kPaths = 3;
  auto p = compile(balanced("p", std::vector<uint32_t>(kPaths, 1)));
  std::vector<std::unique_ptr<SelectorState>> workers;
  for (unsigned w = 0; w < kWorkers; ++w) workers.push_back(std::make_unique<SelectorState>(1));
  for (unsigned n : {10u, 101u, 1000u, 5003u}) {
    for (auto& w : workers) w = std::make_unique<SelectorState>(1);
    std::vector<unsigned> count(kPaths, 0);
    for (uint32_t qp = 0; qp < n; ++qp) {
      const uint32_t hash = hash_of(qp);
      ++count[select_path(*p, 0, hash, 0, 1, *workers[(hash >> 29) % kWorkers])];
    }
    const auto [lo, hi] = std::minmax_element(count.begin(), count.end());
    EXPECT_LE(*hi - *lo, kWorkers) << n << " flows";
  }
}

// A collective in which every source walks its peers in the same order (NCCL: src+1,
// src+2, ...) over a leaf-spine fabric: 4 leaves of 8 hosts, 4 spines, one gateway (worker
// state) per host, one balanced policy per destination leaf whose lists leave via the four
// spines (first hops shared by all policies: one load group per spine). Every source's k-th
// flow to another leaf goes to the same position in that leaf, so with ties among equally
// loaded spines broken toward the first list every source sent its flows toward host d over
// spine (d mod 4): 24 flows on one spine->leaf downlink, none on the other three. Ties
// broken from a start the flow's hash picks keep each source exact (6 flows per spine) and
// spread each destination's 24 flows over the spines.
TEST(Balanced, SourcesWalkingPeersInOneOrderSpreadEachDestinationOverTheSpines) {
  constexpr unsigned kLeaves = 4, kHostsPerLeaf = 8, kSpines = 4;
  constexpr unsigned kHosts = kLeaves * kHostsPerLeaf;
  std::vector<std::unique_ptr<const CompiledPolicy>> to_leaf;
  for (unsigned l = 0; l < kLeaves; ++l) {
    char dst_sid[32];
    std::snprintf(dst_sid, sizeof dst_sid, "fc00:d%u::1", l);
    to_leaf.push_back(
        compile(balanced("to-leaf" + std::to_string(l), std::vector<uint32_t>(kSpines, 1),
                         kLongGapUs, 0x500, dst_sid, uint16_t(100 + 10 * l))));
  }
  for (unsigned l = 1; l < kLeaves; ++l) ASSERT_EQ(to_leaf[l]->load_group, to_leaf[0]->load_group);
  auto host_ip = [](unsigned h) {
    return testing::ip(
        ("10.0." + std::to_string(h / kHostsPerLeaf) + "." + std::to_string(h % kHostsPerLeaf + 1))
            .c_str());
  };
  // flows[d][spine]: flows toward host d over that spine, from all sources
  std::vector<std::vector<unsigned>> flows(kHosts, std::vector<unsigned>(kSpines, 0));
  for (unsigned src = 0; src < kHosts; ++src) {
    SelectorState gateway(kLeaves);
    std::vector<unsigned> own(kSpines, 0);
    for (unsigned k = 1; k < kHosts; ++k) {
      const unsigned dst = (src + k) % kHosts;
      const unsigned leaf = dst / kHostsPerLeaf;
      if (leaf == src / kHostsPerLeaf) continue;  // same leaf: no spine
      const uint32_t hash = flow_hash(host_ip(src), host_ip(dst), 0x100 + src);
      const uint8_t spine = select_path(*to_leaf[leaf], leaf, hash, 0x0a, 1, gateway, 4160);
      ASSERT_LT(spine, kSpines);
      ++own[spine];
      ++flows[dst][spine];
    }
    EXPECT_EQ(own, std::vector<unsigned>(kSpines, 6)) << "source " << src;
  }
  // Hash-chosen ties are no exact spread (that needs every source's view: placement from
  // the controller) but one like a random peer order's: 6 on average, binomial tails.
  const unsigned sources_per_host = kHosts - kHostsPerLeaf;  // 24
  unsigned worst = 0, sum_of_max = 0;
  for (unsigned d = 0; d < kHosts; ++d) {
    const unsigned most = *std::max_element(flows[d].begin(), flows[d].end());
    worst = std::max(worst, most);
    sum_of_max += most;
  }
  const double mean_max = double(sum_of_max) / kHosts;
  std::printf(
      "flows into one host over its busiest spine: mean %.2f, at most %u of %u (even: %u)\n",
      mean_max, worst, sources_per_host, sources_per_host / kSpines);
  EXPECT_LE(worst, 2 * sources_per_host / 3);
  EXPECT_LE(mean_max, 2.0 * sources_per_host / kSpines);
}

// Load = active flows (what the gateway uses) versus recent bytes, on flows of unequal rate
// (heavy flows send every tick, light ones every tenth). Returns the heaviest path's byte
// share over the mean (1.0 = perfect).
double simulate(const CompiledPolicy& p, unsigned flows, unsigned heavy_every,
                uint64_t start_spread, unsigned paths) {
  SelectorState st(1);
  std::vector<uint64_t> bytes(paths, 0);
  for (uint64_t t = 1; t <= 10000; ++t) {
    for (uint32_t f = 0; f < flows; ++f) {
      if (t < 1 + f * start_spread) continue;
      const bool heavy = f % heavy_every == 0;
      if (!heavy && t % 10 != 0) continue;
      bytes[select_path(p, 0, hash_of(f), 0, t, st, 1000)] += 1000;
    }
  }
  const double mean = double(std::accumulate(bytes.begin(), bytes.end(), uint64_t(0))) / paths;
  return double(*std::max_element(bytes.begin(), bytes.end())) / mean;
}

// The measurement behind the choice (printed; docs/design/daemon.md quotes it). Neither metric wins
// every case: flows count exactly what placement controls (how many QPs share a link),
// do not herd when QPs start together, and their byte tie-break splits heavy from light;
// bytes only see the past (a new QP adds nothing until it has sent). The bounds below hold
// for the flow metric in every case.
TEST(Balanced, ActiveFlowsVersusRecentBytes) {
  auto by_flows = compile(balanced("p", {1, 1, 1, 1}, 1000));
  auto by_bytes = std::make_unique<CompiledPolicy>(*by_flows);
  by_bytes->balance_by = BalanceBy::bytes;
  struct Case {
    const char* what;
    unsigned flows, heavy_every;
    uint64_t spread;
    double flows_bound;
  };
  for (const Case& c : {Case{"simultaneous start, 1 in 2 heavy", 32, 2, 0, 1.001},
                        Case{"simultaneous start, 1 in 4 heavy", 32, 4, 0, 1.001},
                        Case{"staggered start (50 us), 1 in 2 heavy", 32, 2, 50, 1.25},
                        Case{"staggered start (50 us), 1 in 4 heavy", 32, 4, 50, 1.01},
                        Case{"staggered start (50 us), all equal", 32, 1, 50, 1.001}}) {
    const double f = simulate(*by_flows, c.flows, c.heavy_every, c.spread, 4);
    const double b = simulate(*by_bytes, c.flows, c.heavy_every, c.spread, 4);
    std::printf("balanced load metric, %s: max/mean path bytes  flows %.3f  bytes %.3f\n", c.what,
                f, b);
    EXPECT_LE(f, c.flows_bound) << c.what;
  }
}

}  // namespace
}  // namespace srv6gw::policy
