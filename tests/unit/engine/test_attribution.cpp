// SPDX-License-Identifier: BSD-3-Clause
// Feedback events -> evidence for our paths: reflected ids, fallback blame, counting only.
#include <gtest/gtest.h>

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
  std::vector<uint16_t> recent;  // what the fake data plane reports
  Attributor attr{
      [this](const net::IpAddr& local, const net::IpAddr& remote, std::vector<uint16_t>& out) {
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
  s.recent = {1, 2, 3};  // must not be consulted
  EXPECT_TRUE(s.attr.feed(
      event(FeedbackKind::cnp_decap, true, dataplane::kTagReflected | 2, "10.0.0.2", "10.0.0.1"),
      s.engine));
  EXPECT_TRUE(s.lookups.empty());
  EXPECT_EQ(s.attr.counters().cnp_reflected, 1u);
  EXPECT_DOUBLE_EQ(s.evidence(2), 1.0);
  EXPECT_DOUBLE_EQ(s.evidence(1), 0.0);
}

TEST(Attribution, UnreflectedCnpBlamesRecentPathsInEqualShares) {
  Rig s;
  s.recent = {3, 1, 3};  // duplicates (several workers) count once
  // The remote's own path id (no reflected bit) says nothing about our paths.
  EXPECT_TRUE(
      s.attr.feed(event(FeedbackKind::cnp_decap, true, 0x0123, "fd00::2", "fd00::1"), s.engine));
  ASSERT_EQ(s.lookups.size(), 1u);
  EXPECT_EQ(s.lookups[0].first, *net::parse_ip("fd00::1"));   // local: the CNP's destination
  EXPECT_EQ(s.lookups[0].second, *net::parse_ip("fd00::2"));  // remote: its source
  EXPECT_EQ(s.attr.counters().cnp_fallback, 1u);
  EXPECT_DOUBLE_EQ(s.evidence(1), 0.5);
  EXPECT_DOUBLE_EQ(s.evidence(3), 0.5);
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
  s.recent = {1};
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
