// SPDX-License-Identifier: BSD-3-Clause
// Path selection over compiled policies: SWRR exactness, per-flow stickiness and spread,
// flowlet gaps on a fake clock, selective spraying, engine factors and backup lists.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "config_builder.hpp"
#include "policy/compiled_policy.hpp"
#include "policy/selection.hpp"

namespace srv6gw::policy {
namespace {

using config::SelectionMode;
using testing::segment_list;

std::unique_ptr<const CompiledPolicy> compile(const config::Policy& p, uint64_t tsc_hz = 0) {
  config::ConfigError err;
  CompileEnv env{testing::v6("fc00:ffff::1"), 64, tsc_hz};
  auto cp = compile_policy(p, env, {}, err);
  EXPECT_NE(cp, nullptr) << err.path << ": " << err.message;
  return cp;
}

config::Policy weighted(SelectionMode mode, std::vector<uint32_t> weights) {
  std::vector<config::SegmentList> lists;
  for (size_t i = 0; i < weights.size(); ++i) {
    const std::string sid = "fc00:" + std::to_string(i + 1) + "::1";
    config::SegmentList sl;
    sl.name = "sl" + std::to_string(i);
    sl.path_id = uint16_t(100 + i);
    sl.weight = weights[i];
    sl.sids.push_back(testing::v6(sid.c_str()));
    lists.push_back(sl);
  }
  return testing::policy("p", mode, lists);
}

// Every aligned window of `cycle` packets carries exactly `weights` packets per list.
void expect_exact_windows(const CompiledPolicy& p, const std::vector<uint32_t>& weights,
                          unsigned cycles) {
  SelectorState st(4);
  uint32_t cycle = 0;
  for (uint32_t w : weights) cycle += w;
  for (unsigned c = 0; c < cycles; ++c) {
    std::vector<uint32_t> got(weights.size(), 0);
    for (uint32_t i = 0; i < cycle; ++i) {
      const uint8_t path = select_path(p, 1, 0x1234, 0x04, 0, st);
      ASSERT_LT(path, weights.size());
      ++got[path];
    }
    EXPECT_EQ(got, weights) << "cycle " << c;
  }
}

TEST(Selection, SwrrExactThreeToOne) {
  auto p = compile(weighted(SelectionMode::packet, {3, 1}));
  expect_exact_windows(*p, {3, 1}, 100);
}

TEST(Selection, SwrrExactFiveThreeTwo) {
  auto p = compile(weighted(SelectionMode::packet, {5, 3, 2}));
  expect_exact_windows(*p, {5, 3, 2}, 100);
}

TEST(Selection, SwrrIsSmooth) {
  // nginx SWRR for 5:1:1 interleaves: a a b a c a a (never b and c next to each other).
  auto p = compile(weighted(SelectionMode::packet, {5, 1, 1}));
  SelectorState st(1);
  std::vector<uint8_t> seq;
  for (int i = 0; i < 7; ++i) seq.push_back(select_path(*p, 0, 0, 0, 0, st));
  EXPECT_EQ(seq, (std::vector<uint8_t>{0, 0, 1, 0, 2, 0, 0}));
}

TEST(Selection, SwrrHonoursFactors) {
  auto p = compile(weighted(SelectionMode::packet, {1, 1}));
  config::ConfigError err;
  auto scaled = with_factors(*p, std::vector<double>{1.0, 0.5}, err);
  ASSERT_NE(scaled, nullptr) << err.message;
  EXPECT_EQ(scaled->lineage, p->lineage);
  EXPECT_NE(scaled->version, p->version);
  expect_exact_windows(*scaled, {2, 1}, 50);
}

TEST(Selection, SwrrStateResetsOnNewVersion) {
  auto a = compile(weighted(SelectionMode::packet, {1, 1}));
  SelectorState st(1);
  EXPECT_EQ(select_path(*a, 0, 0, 0, 0, st), 0);
  config::ConfigError err;
  auto b = with_factors(*a, std::vector<double>{1.0, 1.0}, err);
  // Fresh cursors: the new object starts its cycle from the beginning.
  EXPECT_EQ(select_path(*b, 0, 0, 0, 0, st), 0);
  EXPECT_EQ(select_path(*b, 0, 0, 0, 0, st), 1);
}

// An engine factor change moves only the flows it must: from the list that shrinks to the
// lists that grow, never between lists whose weights did not change; and back again.
TEST(Selection, FactorChangesMoveOnlyTheFlowsTheyMust) {
  auto p = compile(weighted(SelectionMode::flow, {1, 1, 1}));
  config::ConfigError err;
  auto counts = [](const CompiledPolicy& c) {
    std::map<uint8_t, unsigned> n;
    for (uint8_t b : c.buckets) ++n[b];
    return n;
  };
  auto halved = with_factors(*p, std::vector<double>{1.0, 0.5, 1.0}, err);
  ASSERT_NE(halved, nullptr) << err.message;
  const auto n = counts(*halved);
  EXPECT_NEAR(double(n.at(1)) / kBuckets, 0.2, 0.002);  // 1 : 0.5 : 1
  EXPECT_NEAR(double(n.at(0)) / kBuckets, 0.4, 0.002);
  unsigned moved = 0, wrong = 0;
  for (unsigned b = 0; b < kBuckets; ++b) {
    if (p->buckets[b] == halved->buckets[b]) continue;
    ++moved;
    if (p->buckets[b] != 1) ++wrong;  // only list 1's flows may move
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(moved, counts(*p).at(1) - n.at(1));
  // The freed buckets are spread over the two growing lists evenly.
  EXPECT_LE(std::abs(int(n.at(0)) - int(n.at(2))), 1);
  // Back to 1: only flows on 0 and 2 move, all to 1.
  auto restored = with_factors(*halved, std::vector<double>{1.0, 1.0, 1.0}, err);
  ASSERT_NE(restored, nullptr);
  for (unsigned b = 0; b < kBuckets; ++b)
    if (halved->buckets[b] != restored->buckets[b]) {
      EXPECT_EQ(restored->buckets[b], 1) << b;
    }
  EXPECT_EQ(counts(*restored), counts(*p));
  // A list taken out (factor 0): its buckets, and only those, go to the others.
  auto out = with_factors(*restored, std::vector<double>{1.0, 1.0, 0.0}, err);
  ASSERT_NE(out, nullptr);
  for (unsigned b = 0; b < kBuckets; ++b) {
    EXPECT_NE(out->buckets[b], 2);
    if (restored->buckets[b] != 2) {
      EXPECT_EQ(out->buckets[b], restored->buckets[b]) << b;
    }
  }
}

// A list taken out and put back takes back exactly the flows it had: the table is the fresh
// one again (traffic returns to a restored path, issue 6 acceptance 2). After longer
// sequences minimal movement wins: a list keeps the flows it was given meanwhile.
TEST(Selection, RestoredFactorsGiveBackTheOriginalTable) {
  auto p = compile(weighted(SelectionMode::flow, {1, 1, 1}));
  config::ConfigError err;
  auto down = with_factors(*p, std::vector<double>{0.0, 1.0, 1.0}, err);
  ASSERT_NE(down, nullptr) << err.message;
  auto back = with_factors(*down, std::vector<double>{1.0, 1.0, 1.0}, err);
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->buckets, p->buckets);
  // And each step still moved only the flows it had to: list 0's buckets went away whole.
  for (unsigned b = 0; b < kBuckets; ++b) {
    if (p->buckets[b] != 0) {
      EXPECT_EQ(down->buckets[b], p->buckets[b]) << b;
    }
  }
}

TEST(Selection, FlowModeIsStickyAndSpreadsByWeight) {
  auto p = compile(weighted(SelectionMode::flow, {3, 1}));
  SelectorState st(1);
  const net::IpAddr src = testing::ip("10.0.0.1"), dst = testing::ip("10.0.1.1");
  std::vector<uint32_t> count(2, 0);
  constexpr uint32_t kQps = 100000;
  for (uint32_t qp = 0; qp < kQps; ++qp) {
    const uint32_t h = flow_hash(src, dst, qp);
    const uint8_t first = select_path(*p, 0, h, 0x0a, 0, st);
    ASSERT_LT(first, 2);
    ++count[first];
    // Same flow, any opcode, any time: same list.
    for (uint8_t op : {0x06, 0x07, 0x08, 0x11}) {
      ASSERT_EQ(select_path(*p, 0, flow_hash(src, dst, qp), op, qp * 977ull, st), first);
    }
  }
  // 3:1 over 100k QPs: expect 75% +- 2 points (bucket quantisation is 1/1024).
  const double share = double(count[0]) / kQps;
  EXPECT_NEAR(share, 0.75, 0.02) << count[0] << " / " << count[1];
}

TEST(Selection, FlowHashSeparatesEndpointsAndQps) {
  const net::IpAddr a = testing::ip("10.0.0.1"), b = testing::ip("10.0.0.2");
  EXPECT_NE(flow_hash(a, b, 1), flow_hash(b, a, 1));
  EXPECT_NE(flow_hash(a, b, 1), flow_hash(a, b, 2));
  EXPECT_EQ(flow_hash(a, b, 7), flow_hash(a, b, 7));
}

TEST(Selection, FlowletMovesOnlyAfterGap) {
  auto cfg = weighted(SelectionMode::flowlet, {1, 1});
  cfg.flowlet_gap_us = 50;
  auto p = compile(cfg, 2'000'000'000);  // 2 GHz fake TSC: 50 us = 100000 ticks
  ASSERT_EQ(p->flowlet_gap_tsc, 100000u);
  SelectorState st(1);
  const uint32_t h = flow_hash(testing::ip("10.0.0.1"), testing::ip("10.0.1.1"), 42);
  uint64_t now = 1'000'000;
  uint8_t path = select_path(*p, 0, h, 0x0a, now, st);
  // Packets 10 us apart for a long time: never moves.
  for (int i = 0; i < 1000; ++i) {
    now += 20000;
    ASSERT_EQ(select_path(*p, 0, h, 0x0a, now, st), path);
  }
  // Idle exactly the gap: still the same flowlet.
  now += 100000;
  ASSERT_EQ(select_path(*p, 0, h, 0x0a, now, st), path);
  // Idle longer than the gap: a new flowlet, placed by SWRR (1:1 alternates): it moves.
  for (int round = 0; round < 10; ++round) {
    now += 100001;
    const uint8_t next = select_path(*p, 0, h, 0x0a, now, st);
    EXPECT_NE(next, path) << "round " << round;
    path = next;
    for (int i = 0; i < 50; ++i) {
      now += 1000;
      ASSERT_EQ(select_path(*p, 0, h, 0x0a, now, st), path);
    }
  }
}

TEST(Selection, FlowletNeverMovesActiveFlowsWhenManyShareTheTable) {
  // More concurrent QPs than one way per set could hold: with a direct-mapped table, QPs
  // sharing a slot evicted each other and moved in mid-flowlet. Active flows must stay.
  auto cfg = weighted(SelectionMode::flowlet, {1, 1, 1});
  cfg.flowlet_gap_us = 1'000'000;  // 1 s: nothing in this test is ever idle that long
  auto p = compile(cfg, 0);        // 1 tick per us
  SelectorState st(1);
  const net::IpAddr src = testing::ip("10.0.0.1"), dst = testing::ip("10.0.1.1");
  constexpr uint32_t kQps = 3 * kFlowletSets;  // ~3 flows per set: collisions galore
  std::vector<uint8_t> first(kQps);
  uint64_t now = 1;
  for (uint32_t qp = 0; qp < kQps; ++qp)
    first[qp] = select_path(*p, 0, flow_hash(src, dst, qp), 0x0a, now++, st);
  for (int round = 0; round < 5; ++round)
    for (uint32_t qp = 0; qp < kQps; ++qp)
      ASSERT_EQ(select_path(*p, 0, flow_hash(src, dst, qp), 0x0a, now++, st), first[qp])
          << "qp " << qp << " moved in round " << round;
  // Far more flows than the table holds: the overflow is placed by hash and still never moves.
  constexpr uint32_t kMany = 8 * kFlowletEntries;
  std::vector<uint8_t> many(kMany);
  for (uint32_t qp = 0; qp < kMany; ++qp)
    many[qp] = select_path(*p, 0, flow_hash(dst, src, qp), 0x0a, now++, st);
  for (uint32_t qp = 0; qp < kMany; ++qp)
    ASSERT_EQ(select_path(*p, 0, flow_hash(dst, src, qp), 0x0a, now++, st), many[qp]) << qp;
}

TEST(Selection, FlowletLeavesAPathThatBecameUnusable) {
  auto cfg = weighted(SelectionMode::flowlet, {1, 1});
  auto p = compile(cfg, 0);  // 1 tick per us, gap 50
  SelectorState st(1);
  const uint32_t h = flow_hash(testing::ip("10.0.0.1"), testing::ip("10.0.1.1"), 1);
  const uint8_t path = select_path(*p, 0, h, 0, 100, st);
  std::vector<double> f{1.0, 1.0};
  f[path] = 0.0;
  config::ConfigError err;
  auto q = with_factors(*p, f, err);
  ASSERT_NE(q, nullptr);
  // Within the gap, but the path was taken out: the flow moves at once.
  EXPECT_EQ(select_path(*q, 0, h, 0, 101, st), 1 - path);
}

TEST(Selection, SelectiveSpraysOnlyListedOpcodes) {
  auto cfg = weighted(SelectionMode::selective, {1, 1});
  cfg.spray_opcodes = {0x07, 0x08};  // RDMA WRITE middle, last
  auto p = compile(cfg);
  SelectorState st(1);
  const uint32_t h = flow_hash(testing::ip("10.0.0.1"), testing::ip("10.0.1.1"), 9);
  const uint8_t flow_path = select_path(*p, 0, h, 0x06, 0, st);
  std::set<uint8_t> sprayed;
  std::vector<uint32_t> spray_count(2, 0);
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(select_path(*p, 0, h, 0x06, 0, st), flow_path);  // WRITE first: per flow
    ASSERT_EQ(select_path(*p, 0, h, 0x0a, 0, st), flow_path);  // WRITE only: per flow
    ASSERT_EQ(select_path(*p, 0, h, 0x11, 0, st), flow_path);  // ACK: per flow
    const uint8_t s = select_path(*p, 0, h, 0x07, 0, st);
    ++spray_count[s];
    ++spray_count[select_path(*p, 0, h, 0x08, 0, st)];
  }
  EXPECT_EQ(spray_count[0], 100u);  // SWRR 1:1 over 200 sprayed packets
  EXPECT_EQ(spray_count[1], 100u);
}

TEST(Selection, FactorZeroRemovesAList) {
  for (SelectionMode mode : {SelectionMode::flow, SelectionMode::packet, SelectionMode::adaptive,
                             SelectionMode::flowlet, SelectionMode::selective}) {
    auto p = compile(weighted(mode, {1, 1, 1}));
    config::ConfigError err;
    auto q = with_factors(*p, std::vector<double>{1.0, 0.0, 1.0}, err);
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->active_count, 2);
    SelectorState st(1);
    std::vector<uint32_t> count(3, 0);
    for (uint32_t qp = 0; qp < 5000; ++qp) {
      const uint32_t h = flow_hash(testing::ip("10.0.0.1"), testing::ip("10.0.1.1"), qp);
      ++count[select_path(*q, 0, h, 0x07, qp * 1000ull, st)];
    }
    EXPECT_EQ(count[1], 0u) << to_string(mode);
    EXPECT_GT(count[0], 1000u) << to_string(mode);
    EXPECT_GT(count[2], 1000u) << to_string(mode);
  }
}

TEST(Selection, BackupOnlyWhenAllPrimariesDown) {
  config::Policy cfg = testing::policy(
      "p", SelectionMode::packet,
      {segment_list("a", 1, 1, {"fc00:1::1"}), segment_list("b", 2, 1, {"fc00:2::1"}),
       segment_list("c", 3, 5, {"fc00:3::1"}, /*backup=*/true)});
  auto p = compile(cfg);
  SelectorState st(1);
  auto histogram = [&](const CompiledPolicy& pol) {
    std::vector<uint32_t> count(3, 0);
    for (int i = 0; i < 600; ++i) {
      const uint8_t path = select_path(pol, 0, uint32_t(i * 2654435761u), 0, 0, st);
      if (path == kNoPath) return std::vector<uint32_t>{};
      ++count[path];
    }
    return count;
  };
  EXPECT_EQ(histogram(*p), (std::vector<uint32_t>{300, 300, 0}));
  config::ConfigError err;
  auto one_down = with_factors(*p, std::vector<double>{0.0, 1.0, 1.0}, err);
  EXPECT_EQ(histogram(*one_down), (std::vector<uint32_t>{0, 600, 0}));
  auto all_down = with_factors(*p, std::vector<double>{0.0, 0.0, 1.0}, err);
  EXPECT_EQ(histogram(*all_down), (std::vector<uint32_t>{0, 0, 600}));
  auto everything_down = with_factors(*p, std::vector<double>{0.0, 0.0, 0.0}, err);
  EXPECT_EQ(everything_down->active_count, 0);
  EXPECT_EQ(select_path(*everything_down, 0, 1, 0, 0, st), kNoPath);
  // Flow mode uses the same active set.
  cfg.selection = SelectionMode::flow;
  auto flow = compile(cfg);
  for (uint8_t b : flow->buckets) EXPECT_NE(b, 2);
  auto flow_down = with_factors(*flow, std::vector<double>{0.0, 0.0, 1.0}, err);
  for (uint8_t b : flow_down->buckets) EXPECT_EQ(b, 2);
}

TEST(Selection, BucketTableFollowsWeights) {
  auto p = compile(weighted(SelectionMode::flow, {5, 3, 2}));
  std::vector<uint32_t> count(3, 0);
  for (uint8_t b : p->buckets) ++count[b];
  EXPECT_EQ(count[0] + count[1] + count[2], kBuckets);
  EXPECT_NEAR(count[0], 512, 1);
  EXPECT_NEAR(count[1], 307, 1);
  EXPECT_NEAR(count[2], 205, 1);
  // A tiny weight still gets a bucket (a usable list carries some flows).
  auto q = compile(weighted(SelectionMode::flow, {1000000, 1}));
  uint32_t small = 0;
  for (uint8_t b : q->buckets) small += b == 1;
  EXPECT_EQ(small, 1u);
}

TEST(Selection, BadFactorsAreRefused) {
  auto p = compile(weighted(SelectionMode::flow, {1, 1}));
  config::ConfigError err;
  EXPECT_EQ(with_factors(*p, std::vector<double>{1.0}, err), nullptr);
  EXPECT_EQ(with_factors(*p, std::vector<double>{1.0, -1.0}, err), nullptr);
  EXPECT_NE(err.path.find("segment-list[name='sl1']"), std::string::npos) << err.path;
  EXPECT_EQ(with_factors(*p, std::vector<double>{1.0, std::nan("")}, err), nullptr);
}

TEST(Selection, TemplateBuildErrorsNameTheSegmentList) {
  auto cfg = weighted(SelectionMode::flow, {1});
  cfg.encap = srv6::EncapMode::usid;
  cfg.segment_lists[0].sids = {testing::v6("fc00:1::1"), testing::v6("fd00:2::1")};
  config::ConfigError err;
  CompileEnv env{testing::v6("fc00:ffff::1"), 64, 0};
  EXPECT_EQ(compile_policy(cfg, env, {}, err), nullptr);
  EXPECT_NE(err.path.find("segment-list[name='sl0']"), std::string::npos) << err.path;
}

TEST(Selection, TemplatesCarryPathIdAndHopLimit) {
  auto cfg = weighted(SelectionMode::flow, {1, 1});
  config::ConfigError err;
  CompileEnv env{testing::v6("fc00:ffff::1"), 17, 0};
  auto p = compile_policy(cfg, env, {}, err);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->paths[1].path_id, 101);
  EXPECT_EQ(p->paths[1].encap.bytes[7], 17);  // IPv6 hop limit
  EXPECT_EQ(p->paths[1].encap.first_destination, testing::v6("fc00:2::1"));
}

}  // namespace
}  // namespace srv6gw::policy
