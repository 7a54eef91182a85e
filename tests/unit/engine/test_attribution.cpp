// SPDX-License-Identifier: BSD-3-Clause
// Feedback events -> evidence for our paths: reflected ids, fallback blame, counting only.
#include <gtest/gtest.h>

#include <map>

#include "engine/attribution.hpp"

namespace srv6gw::engine {
namespace {

using dataplane::FeedbackEvent;
using dataplane::FeedbackKind;

FeedbackEvent event(FeedbackKind kind, bool has_tag, uint16_t tag, const char* src,
                    const char* dst) {
  FeedbackEvent e;
  e.kind = kind;
  e.flags = has_tag ? dataplane::kFeedbackHasTag : 0;
  e.tag = tag;
  const net::IpAddr s = *net::parse_ip(src), d = *net::parse_ip(dst);
  if (s.family == net::Family::ipv6) e.flags |= dataplane::kFeedbackIpv6;
  std::memcpy(e.inner_src, s.bytes.data(), 16);
  std::memcpy(e.inner_dst, d.bytes.data(), 16);
  return e;
}

struct Rig {
  Engine engine;
  std::vector<std::pair<net::IpAddr, net::IpAddr>> lookups;
  std::vector<dataplane::RecentUse> recent;  // what the fake data plane reports
  Attributor attr{[this](const net::IpAddr& local, const net::IpAddr& remote,
                         std::vector<dataplane::RecentUse>& out) {
    lookups.emplace_back(local, remote);
    out.insert(out.end(), recent.begin(), recent.end());
  }};
  Rig() {
    engine.set_policies({{"p", {{"a", 1, 1, false}, {"b", 2, 1, false}, {"c", 3, 1, false}}}});
  }
  double evidence(uint16_t id) {
    std::vector<Decision> out;
    // Close one interval to turn evidence into scores: score = alpha * evidence.
    engine.tick(0, out);
    engine.tick(100000, out);
    for (const PathView& v : engine.paths())
      if (v.path_id == id) return v.score / engine.params().alpha;
    return -1;
  }
};

TEST(Attribution, ReflectedCnpBlamesExactlyThatPath) {
  Rig s;
  s.recent = {{1, 1}, {2, 1}, {3, 1}};  // must not be consulted
  EXPECT_TRUE(s.attr.feed(
      event(FeedbackKind::cnp_decap, true, dataplane::kTagReflected | 2, "10.0.0.2", "10.0.0.1"),
      s.engine));
  EXPECT_TRUE(s.lookups.empty());
  EXPECT_EQ(s.attr.counters().cnp_reflected, 1u);
  EXPECT_DOUBLE_EQ(s.evidence(2), 1.0);
  EXPECT_DOUBLE_EQ(s.evidence(1), 0.0);
}

TEST(Attribution, UnreflectedCnpBlamesRecentPathsInProportionToUse) {
  Rig s;
  s.recent = {{3, 20}, {1, 10}, {3, 10}};  // path 3 on two workers: 30 packets, path 1: 10
  // The remote's own path id (no reflected bit) says nothing about our paths.
  EXPECT_TRUE(
      s.attr.feed(event(FeedbackKind::cnp_decap, true, 0x0123, "fd00::2", "fd00::1"), s.engine));
  ASSERT_EQ(s.lookups.size(), 1u);
  EXPECT_EQ(s.lookups[0].first, *net::parse_ip("fd00::1"));   // local: the CNP's destination
  EXPECT_EQ(s.lookups[0].second, *net::parse_ip("fd00::2"));  // remote: its source
  EXPECT_EQ(s.attr.counters().cnp_fallback, 1u);
  EXPECT_DOUBLE_EQ(s.evidence(1), 0.25);
  EXPECT_DOUBLE_EQ(s.evidence(3), 0.75);
  EXPECT_DOUBLE_EQ(s.evidence(2), 0.0);
}

TEST(Attribution, CnpWithoutSrhOrHistoryIsUnattributed) {
  Rig s;
  EXPECT_FALSE(s.attr.feed(event(FeedbackKind::cnp_decap, false, 0x8001, "10.0.0.2", "10.0.0.1"),
                           s.engine));  // no SRH: the tag bits mean nothing
  EXPECT_EQ(s.attr.counters().cnp_unattributed, 1u);
}

TEST(Attribution, CeAndSentCnpsAreCountedOnly) {
  Rig s;
  s.recent = {{1, 5}};
  EXPECT_FALSE(
      s.attr.feed(event(FeedbackKind::ce_decap, true, 7, "10.0.0.2", "10.0.0.1"), s.engine));
  EXPECT_FALSE(s.attr.feed(
      event(FeedbackKind::cnp_encap, true, dataplane::kTagReflected | 7, "10.0.0.1", "10.0.0.2"),
      s.engine));
  EXPECT_EQ(s.attr.counters().ce_seen, 1u);
  EXPECT_EQ(s.attr.counters().cnp_sent, 1u);
  EXPECT_EQ(s.attr.counters().cnp_sent_reflected, 1u);
  EXPECT_EQ(s.engine.counters().reports, 0u);
}

TEST(Attribution, ReflectedIdThatIsNotOursIsCounted) {
  Rig s;
  EXPECT_FALSE(s.attr.feed(
      event(FeedbackKind::cnp_decap, true, dataplane::kTagReflected | 99, "10.0.0.2", "10.0.0.1"),
      s.engine));
  EXPECT_EQ(s.attr.counters().unknown_path, 1u);
}

// The per-worker recent-use entry, without EAL: counts per list over two epochs.
std::map<uint8_t, uint32_t> read_use(const dataplane::RecentPathEntry& e, uint32_t key,
                                     uint32_t now_epoch) {
  std::map<uint8_t, uint32_t> m;
  dataplane::recent_read(e, key, now_epoch, [&](uint8_t idx, uint32_t n) { m[idx] += n; });
  return m;
}

// The worker's way search (one word, SWAR byte match) against the obvious loop, on random
// words biased to hold repeated and neighbouring byte values (where a borrow could mislead).
TEST(RecentUse, WaySearchMatchesTheFirstEqualByte) {
  uint64_t rng = 0x9E3779B97F4A7C15ull;
  auto next = [&] {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
  };
  for (int round = 0; round < 200000; ++round) {
    uint64_t packed = 0;
    const uint8_t base = uint8_t(next());
    for (unsigned i = 0; i < 8; ++i) {
      const uint64_t r = next();
      const uint8_t b = r % 4 == 0 ? 0xFF : uint8_t(base + r % 3);  // free, or near `base`
      packed |= uint64_t(b) << (8 * i);
    }
    for (uint8_t idx :
         {uint8_t(base), uint8_t(base + 1), uint8_t(base + 2), uint8_t(0), uint8_t(next())}) {
      if (idx == dataplane::kRecentNoPath) continue;
      unsigned want = dataplane::kRecentWays;
      for (unsigned i = 0; i < 8; ++i)
        if (uint8_t(packed >> (8 * i)) == idx) {
          want = i;
          break;
        }
      ASSERT_EQ(dataplane::recent_find_way(packed, idx), want)
          << std::hex << "packed " << packed << " idx " << unsigned(idx);
    }
  }
}

TEST(RecentUse, CountsPerListOverTheCurrentAndPreviousEpoch) {
  dataplane::RecentPathEntry e;
  const uint32_t key = 0x1235, other = 0x7777;
  for (int i = 0; i < 30; ++i) dataplane::recent_note(e, key, 4, 1, 100);  // on list 1
  for (int i = 0; i < 10; ++i) dataplane::recent_note(e, key, 4, 0, 100);  // moved to list 0
  using M = std::map<uint8_t, uint32_t>;
  EXPECT_EQ(read_use(e, key, 100), (M{{0, 10}, {1, 30}}));
  EXPECT_TRUE(read_use(e, other, 100).empty());  // another pair in the same slot
  // Next epoch: the flow sends on list 0 only; list 1 is still in the window, by its use.
  for (int i = 0; i < 5; ++i) dataplane::recent_note(e, key, 4, 0, 101);
  EXPECT_EQ(read_use(e, key, 101), (M{{0, 15}, {1, 30}}));
  // Read an epoch later (nothing sent since): only what was current then.
  EXPECT_EQ(read_use(e, key, 102), (M{{0, 5}}));
  EXPECT_TRUE(read_use(e, key, 103).empty());  // older than the window
  // Idle for several epochs: history restarts.
  dataplane::recent_note(e, key, 4, 2, 110);
  EXPECT_EQ(read_use(e, key, 110), (M{{2, 1}}));
  // Another pair (or policy slot) takes the entry over.
  dataplane::recent_note(e, other, 4, 3, 110);
  EXPECT_EQ(read_use(e, other, 110), (M{{3, 1}}));
  EXPECT_TRUE(read_use(e, key, 110).empty());
  dataplane::recent_note(e, other, 5, 3, 110);
  EXPECT_EQ(read_use(e, other, 110), (M{{3, 1}}));
}

// A new pair leaves the previous pair's counters in the ways it marks free: none of them may
// show up in the new pair's counts, in this epoch, the next one or after a saturation.
TEST(RecentUse, ANewPairNeverSeesThePreviousPairsCounts) {
  using M = std::map<uint8_t, uint32_t>;
  dataplane::RecentPathEntry e;
  const uint32_t key = 0x4321, other = 0x8765;
  for (uint8_t l = 0; l < dataplane::kRecentWays; ++l)
    for (int i = 0; i < 100 + l; ++i) dataplane::recent_note(e, key, 4, l, 50);
  dataplane::recent_note(e, key, 4, 0, 51);  // the old pair's counts also in `prev`
  dataplane::recent_note(e, other, 4, 9, 51);
  EXPECT_EQ(read_use(e, other, 51), (M{{9, 1}}));
  dataplane::recent_note(e, other, 4, 10, 51);  // a second list takes a free way
  dataplane::recent_note(e, other, 4, 10, 51);
  EXPECT_EQ(read_use(e, other, 51), (M{{9, 1}, {10, 2}}));
  dataplane::recent_note(e, other, 4, 11, 52);  // next epoch: prev from the new pair only
  EXPECT_EQ(read_use(e, other, 52), (M{{9, 1}, {10, 2}, {11, 1}}));
  EXPECT_TRUE(read_use(e, key, 52).empty());
  for (int i = 0; i < 70000; ++i) dataplane::recent_note(e, other, 4, 11, 52);  // saturates
  for (uint8_t l = 12; l < 12 + dataplane::kRecentWays - 3; ++l)
    dataplane::recent_note(e, other, 4, l, 52);  // every remaining free way taken
  const M m = read_use(e, other, 52);
  for (const auto& [l, n] : m) EXPECT_GE(l, 9) << "a list of the previous pair";
  for (uint8_t l = 12; l < 12 + dataplane::kRecentWays - 3; ++l) EXPECT_EQ(m.at(l), 1u) << int(l);
}

TEST(RecentUse, MoreListsThanWaysKeepsTheMostUsedAndSaturationKeepsProportions) {
  dataplane::RecentPathEntry e;
  const uint32_t key = 0x99;
  for (uint8_t l = 0; l < dataplane::kRecentWays; ++l)
    for (int i = 0; i <= l; ++i) dataplane::recent_note(e, key, 0, l, 7);
  dataplane::recent_note(e, key, 0, 40, 7);  // a ninth list replaces the least used (list 0)
  auto m = read_use(e, key, 7);
  EXPECT_EQ(m.size(), dataplane::kRecentWays);
  EXPECT_EQ(m.count(0), 0u);
  EXPECT_EQ(m[40], 1u);
  EXPECT_EQ(m[7], 8u);
  dataplane::RecentPathEntry s;
  // 2:1 over 150000 packets: list 0's count overflows 16 bits twice, every count is halved
  // each time, the proportion stays.
  for (int i = 0; i < 150000; ++i) dataplane::recent_note(s, key, 0, i % 3 == 2 ? 1 : 0, 1);
  m = read_use(s, key, 1);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_GT(m[0], 30000u);
  EXPECT_NEAR(double(m[1]) / double(m[0] + m[1]), 1.0 / 3.0, 0.01);
}

TEST(ReflectTable, FreshEntriesReflectAndStaleOnesDoNot) {
  auto t = std::make_unique<dataplane::ReflectTable>();
  t->max_age = 4;
  const net::IpAddr r = *net::parse_ip("10.0.0.2"), l = *net::parse_ip("10.0.0.1");
  const uint32_t key = dataplane::pair_hash(r, l);
  EXPECT_EQ(t->lookup(key, 0), 0);
  const uint64_t t0 = uint64_t(1000) << dataplane::kReflectTimeShift;
  t->record(key, 0x1234, t0);
  EXPECT_EQ(t->lookup(key, t0), dataplane::kTagReflected | 0x1234);
  EXPECT_EQ(t->lookup(key, t0 + (uint64_t(4) << dataplane::kReflectTimeShift)),
            dataplane::kTagReflected | 0x1234);
  EXPECT_EQ(t->lookup(key, t0 + (uint64_t(5) << dataplane::kReflectTimeShift)), 0);
  EXPECT_EQ(t->lookup(dataplane::pair_hash(l, r), t0), 0);  // the other direction
}

}  // namespace
}  // namespace srv6gw::engine
