// SPDX-License-Identifier: BSD-3-Clause
// The probe state machine (engine/probe_monitor.hpp) on synthetic time: loss -> down exactly
// at the threshold, answers in between reset the count, hold-down -> up, late and duplicate
// replies, RTT min/avg/p99 and loss ratio; and the engine's probe down/up (failover to the
// remaining lists, the controller's down kept).
#include <gtest/gtest.h>

#include <vector>

#include "engine/engine.hpp"
#include "engine/probe_monitor.hpp"

namespace srv6gw::engine {
namespace {

constexpr uint64_t kUs = 1000;
constexpr uint64_t kMs = 1000 * kUs;

ProbeParams params() {
  ProbeParams p;
  p.interval_us = 1000;
  p.timeout_us = 3000;
  p.loss_threshold = 3;
  p.hold_down_us = 50000;
  return p;
}

struct Harness {
  ProbeMonitor m{params()};
  uint64_t now = 1 * kMs;
  std::vector<ProbeTransition> out;
  Harness() { m.set_paths({{"pol", "a", 1}, {"pol", "b", 2}}); }

  // One interval: send on both paths; answer those in `answer` after `rtt`; tick.
  void step(bool answer_a, bool answer_b, uint64_t rtt = 100 * kUs) {
    uint32_t sa = 0, sb = 0;
    EXPECT_TRUE(m.next_seq(1, now, sa));
    EXPECT_TRUE(m.next_seq(2, now, sb));
    if (answer_a) {
      EXPECT_TRUE(m.on_reply(1, sa, rtt, now + rtt));
    }
    if (answer_b) {
      EXPECT_TRUE(m.on_reply(2, sb, rtt, now + rtt));
    }
    now += kMs;
    m.tick(now, out);
  }
  ProbePathView view(uint16_t id) const {
    for (const ProbePathView& v : m.paths())
      if (v.path_id == id) return v;
    return {};
  }
};

TEST(ProbeMonitor, DownExactlyAtThreshold) {
  Harness h;
  for (int i = 0; i < 10; ++i) h.step(true, true);
  EXPECT_TRUE(h.out.empty());
  // Path a stops answering. Probe k is lost at send + timeout (3 ms): the third lost one
  // is declared lost 3 intervals after it was sent.
  unsigned steps = 0;
  while (h.out.empty() && steps < 20) {
    h.step(false, true);
    ++steps;
  }
  ASSERT_EQ(h.out.size(), 1u);
  EXPECT_EQ(h.out[0].path_id, 1);
  EXPECT_EQ(h.out[0].to, ProbeState::down);
  EXPECT_EQ(h.out[0].consecutive_lost, 3u);
  // Sent at steps 1..3; the 3rd is lost 3 ms after it left: tick of step 3 + 3 = 5 or 6.
  EXPECT_GE(steps, 5u);
  EXPECT_LE(steps, 6u);
  EXPECT_EQ(h.view(1).state, ProbeState::down);
  EXPECT_EQ(h.view(2).state, ProbeState::up);
  EXPECT_EQ(h.view(2).lost, 0u);
}

TEST(ProbeMonitor, AnswerBetweenLossesResetsTheCount) {
  Harness h;
  for (int i = 0; i < 50; ++i) h.step(i % 3 != 0, true);  // two of three answered
  EXPECT_TRUE(h.out.empty());
  EXPECT_EQ(h.view(1).state, ProbeState::up);
  EXPECT_GT(h.view(1).lost, 10u);
  EXPECT_NEAR(h.view(1).loss_ratio, 1.0 / 3, 0.05);
  // Two lost in a row, then answered, repeatedly: never 3 consecutive.
  for (int i = 0; i < 30; ++i) h.step(i % 3 == 2, true);
  EXPECT_TRUE(h.out.empty());
}

TEST(ProbeMonitor, HoldDownBeforeUp) {
  Harness h;
  h.step(true, true);
  for (int i = 0; i < 10; ++i) h.step(false, true);
  ASSERT_EQ(h.out.size(), 1u);
  h.out.clear();
  // Answers again: up only after 50 ms of answers with no loss.
  const uint64_t back = h.now;
  while (h.out.empty() && h.now < back + 200 * kMs) h.step(true, true);
  ASSERT_EQ(h.out.size(), 1u);
  EXPECT_EQ(h.out[0].to, ProbeState::up);
  // Probes still in flight when it came back are declared lost first (up to 3 ms), which
  // restarts the hold-down; then 50 ms.
  EXPECT_GE(h.now - back, 50 * kMs);
  EXPECT_LE(h.now - back, 56 * kMs);
  EXPECT_EQ(h.view(1).state, ProbeState::up);
  EXPECT_GT(h.view(1).last_change_ns, back);
}

TEST(ProbeMonitor, LossDuringHoldDownRestartsIt) {
  Harness h;
  for (int i = 0; i < 10; ++i) h.step(false, true);
  ASSERT_EQ(h.out.size(), 1u);
  h.out.clear();
  for (int i = 0; i < 30; ++i) h.step(true, true);
  h.step(false, true);  // one loss, 30 ms into the hold-down
  const uint64_t restart = h.now;
  while (h.out.empty() && h.now < restart + 200 * kMs) h.step(true, true);
  ASSERT_EQ(h.out.size(), 1u);
  EXPECT_GE(h.now - restart, 50 * kMs);
}

TEST(ProbeMonitor, NeverAnsweringRemoteGoesDown) {
  Harness h;
  for (int i = 0; i < 10; ++i) h.step(false, false);
  ASSERT_EQ(h.out.size(), 2u);
  for (const ProbePathView& v : h.m.paths()) {
    EXPECT_EQ(v.state, ProbeState::down);
    EXPECT_EQ(v.answered, 0u);
    EXPECT_EQ(v.rtt_samples, 0u);
    EXPECT_DOUBLE_EQ(v.loss_ratio, 1.0);
  }
  // It stays down; no further transitions while nothing answers.
  h.out.clear();
  for (int i = 0; i < 100; ++i) h.step(false, false);
  EXPECT_TRUE(h.out.empty());
}

TEST(ProbeMonitor, LateDuplicateAndUnknownReplies) {
  Harness h;
  uint32_t seq = 0;
  ASSERT_TRUE(h.m.next_seq(1, h.now, seq));
  h.now += 10 * kMs;
  h.m.tick(h.now, h.out);  // lost
  EXPECT_EQ(h.view(1).lost, 1u);
  EXPECT_FALSE(h.m.on_reply(1, seq, 10 * kMs, h.now));  // late
  EXPECT_EQ(h.view(1).late, 1u);
  EXPECT_EQ(h.view(1).answered, 0u);
  ASSERT_TRUE(h.m.next_seq(1, h.now, seq));
  EXPECT_TRUE(h.m.on_reply(1, seq, 5 * kUs, h.now));
  EXPECT_FALSE(h.m.on_reply(1, seq, 5 * kUs, h.now));        // duplicate
  EXPECT_FALSE(h.m.on_reply(1, seq + 100, 5 * kUs, h.now));  // never sent
  EXPECT_FALSE(h.m.on_reply(9, 1, 5 * kUs, h.now));          // unknown path
  EXPECT_EQ(h.m.counters().unknown_seq, 2u);
  EXPECT_EQ(h.m.counters().unknown_path, 1u);
  uint32_t unused = 0;
  EXPECT_FALSE(h.m.next_seq(9, h.now, unused));
}

TEST(ProbeMonitor, RttStatistics) {
  Harness h;
  // 100 answers: 1..100 us; p99 (nearest rank) = 99 us, min 1, avg 50.5.
  for (uint64_t i = 1; i <= 100; ++i) {
    uint32_t seq = 0;
    ASSERT_TRUE(h.m.next_seq(1, h.now, seq));
    ASSERT_TRUE(h.m.on_reply(1, seq, i * kUs, h.now));
    h.now += kMs;
  }
  const ProbePathView v = h.view(1);
  EXPECT_EQ(v.rtt_samples, 100u);
  EXPECT_EQ(v.rtt_min_ns, 1 * kUs);
  EXPECT_EQ(v.rtt_avg_ns, 50500u);
  EXPECT_EQ(v.rtt_p99_ns, 99 * kUs);
  EXPECT_EQ(v.rtt_last_ns, 100 * kUs);
  // The window keeps the newest kRttWindow samples.
  for (unsigned i = 0; i < kRttWindow; ++i) {
    uint32_t seq = 0;
    ASSERT_TRUE(h.m.next_seq(1, h.now, seq));
    ASSERT_TRUE(h.m.on_reply(1, seq, 1000 * kUs, h.now));
  }
  EXPECT_EQ(h.view(1).rtt_min_ns, 1000 * kUs);
  EXPECT_EQ(h.view(1).rtt_samples, kRttWindow);
}

TEST(ProbeMonitor, StateFollowsPathIdAcrossReconfiguration) {
  Harness h;
  for (int i = 0; i < 10; ++i) h.step(false, true);
  h.m.set_paths({{"pol", "renamed", 1}, {"pol", "c", 3}});
  EXPECT_EQ(h.view(1).state, ProbeState::down);
  EXPECT_EQ(h.view(1).segment_list, "renamed");
  EXPECT_EQ(h.view(3).state, ProbeState::up);
  EXPECT_EQ(h.m.paths().size(), 2u);
}

TEST(ProbeParams, RefusalsNameTheField) {
  ProbeParams p;
  EXPECT_FALSE(check(p));
  p.interval_us = 10;
  EXPECT_EQ(check(p)->field, "interval-us");
  p = ProbeParams{};
  p.loss_threshold = 0;
  EXPECT_EQ(check(p)->field, "loss-threshold");
  p = ProbeParams{};
  p.timeout_us = 2000000;
  p.interval_us = 1000;  // 2000 probes in flight
  EXPECT_EQ(check(p)->field, "timeout-us");
}

// The engine: a probe down takes the path out at once (traffic goes to the others), up
// returns it at factor 1; a controller's down is not undone by probes coming back.
TEST(EngineProbe, DownFailsOverUpReturns) {
  Engine e;
  e.set_policies({{"pol", {{"a", 1, 1, false}, {"b", 2, 1, false}, {"bk", 3, 1, true}}}});
  std::vector<Decision> d;
  ASSERT_TRUE(e.set_probe(1, false, 10, d));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].reason, Reason::probe_down);
  EXPECT_EQ(d[0].new_factor, 0.0);
  EXPECT_EQ(e.factors("pol"), (std::vector<double>{0.0, 1.0, 1.0}));
  // Congestion evidence on a probe-down path changes nothing.
  e.tick(0, d);
  e.report(1, 100);
  d.clear();
  e.tick(1000000, d);
  EXPECT_TRUE(d.empty());
  // Both primaries down: only an explicit or probe down may empty the primaries (the data
  // plane then uses the backup).
  ASSERT_TRUE(e.set_probe(2, false, 20, d));
  EXPECT_EQ(e.factors("pol"), (std::vector<double>{0.0, 0.0, 1.0}));
  d.clear();
  ASSERT_TRUE(e.set_probe(1, true, 30, d));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].reason, Reason::probe_up);
  EXPECT_EQ(e.factors("pol")[0], 1.0);
  // Controller holds b down; probes come back: b stays down until the controller's up.
  d.clear();
  ASSERT_TRUE(e.set_admin(2, false, 40, d));
  d.clear();
  ASSERT_TRUE(e.set_probe(2, true, 50, d));
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(e.factors("pol")[1], 0.0);
  ASSERT_TRUE(e.set_admin(2, true, 60, d));
  EXPECT_EQ(e.factors("pol")[1], 1.0);
  // And a probe-down path is not brought back by the controller's up.
  d.clear();
  ASSERT_TRUE(e.set_probe(1, false, 70, d));
  ASSERT_TRUE(e.set_admin(1, true, 80, d));
  EXPECT_EQ(e.factors("pol")[0], 0.0);
  EXPECT_FALSE(e.set_probe(99, false, 90, d));
  for (const PathView& v : e.paths()) {
    if (v.path_id == 1) {
      EXPECT_TRUE(v.probe_down);
    }
  }
}

// The last usable list of a policy stays in service when its probes fail (sending into a
// path that may be dead loses nothing more than dropping here; a false alarm costs nothing)
// and leaves as soon as another list is back.
TEST(EngineProbe, LastUsableListIsKept) {
  Engine e;
  e.set_policies(
      {{"two", {{"a", 1, 1, false}, {"b", 2, 1, false}}}, {"one", {{"x", 9, 1, false}}}});
  std::vector<Decision> d;
  ASSERT_TRUE(e.set_probe(9, false, 10, d));
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(e.factors("one"), (std::vector<double>{1.0}));
  ASSERT_TRUE(e.set_probe(1, false, 20, d));
  ASSERT_TRUE(e.set_probe(2, false, 30, d));  // the last one of "two": kept
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(e.factors("two"), (std::vector<double>{0.0, 1.0}));
  EXPECT_EQ(e.counters().probe_last_path_kept, 2u);
  d.clear();
  ASSERT_TRUE(e.set_probe(1, true, 40, d));  // a is back: b (still probe-down) goes out
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].path_id, 2);
  EXPECT_EQ(d[0].reason, Reason::probe_down);
  EXPECT_EQ(d[1].path_id, 1);
  EXPECT_EQ(d[1].reason, Reason::probe_up);
  EXPECT_EQ(e.factors("two"), (std::vector<double>{1.0, 0.0}));
  d.clear();
  ASSERT_TRUE(e.set_probe(2, true, 50, d));
  EXPECT_EQ(e.factors("two"), (std::vector<double>{1.0, 1.0}));
}

// A pause storm makes the fabric port unusable (docs/design/lossless.md): every path leaves by
// it, so the probes all paths lose meanwhile and the congestion seen blame none of them. The
// engine holds its factors and the latest probe verdict per path, and applies those verdicts
// when the port is usable again.
TEST(EngineProbe, FabricUnusableHoldsFactorsAndProbeVerdicts) {
  Engine e;
  e.set_policies({{"pol", {{"a", 1, 1, false}, {"b", 2, 1, false}, {"bk", 3, 1, true}}}});
  std::vector<Decision> d;
  e.tick(0, d);
  e.set_fabric_usable(false, 10, d);
  EXPECT_FALSE(e.fabric_usable());
  // Probes lost on both primaries and CNP evidence: no decision while the storm lasts.
  ASSERT_TRUE(e.set_probe(1, false, 20, d));
  ASSERT_TRUE(e.set_probe(2, false, 30, d));
  ASSERT_TRUE(e.report(1, 100));
  e.tick(10'000'000, d);
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(e.factors("pol"), (std::vector<double>{1.0, 1.0, 1.0}));
  // Path b answers again before the storm ends: its latest verdict (up) is the one kept.
  ASSERT_TRUE(e.set_probe(2, true, 40, d));
  EXPECT_FALSE(e.set_probe(99, false, 45, d));  // unknown ids are still refused
  EXPECT_EQ(e.counters().probe_held_fabric_unusable, 3u);
  EXPECT_EQ(e.counters().evidence_fabric_unusable, 1u);
  // Usable again: a's down applies now (it was really lost), b had come back.
  e.set_fabric_usable(true, 50, d);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].path_id, 1);
  EXPECT_EQ(d[0].reason, Reason::probe_down);
  EXPECT_EQ(e.factors("pol"), (std::vector<double>{0.0, 1.0, 1.0}));
  EXPECT_EQ(e.counters().fabric_unusable_periods, 1u);
  // Nothing held is applied twice, and evidence counts again.
  d.clear();
  e.set_fabric_usable(true, 60, d);
  EXPECT_TRUE(d.empty());
  EXPECT_TRUE(e.report(2, 1));
  EXPECT_EQ(e.counters().evidence_fabric_unusable, 1u);
}

}  // namespace
}  // namespace srv6gw::engine
