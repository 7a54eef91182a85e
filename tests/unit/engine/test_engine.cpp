// SPDX-License-Identifier: BSD-3-Clause
// The local SR engine's algorithm on synthetic event sequences and synthetic time.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>

#include "engine/engine.hpp"

namespace srv6gw::engine {
namespace {

constexpr uint64_t kUs = 1000;
constexpr uint64_t kMs = 1000 * kUs;

PolicySpec policy(const std::string& name, std::vector<PathSpec> paths) {
  return PolicySpec{name, std::move(paths)};
}

// Three primaries a (1), b (2), c (3) in policy "p".
struct Fixture {
  Params params;
  Engine engine;
  uint64_t now = 1 * kMs;  // engine time, advances by one interval per step
  std::vector<Decision> log;

  explicit Fixture(std::vector<PathSpec> paths = {{"a", 1, 1, false},
                                                  {"b", 2, 1, false},
                                                  {"c", 3, 1, false}},
                   Params p = {})
      : params(p), engine(p) {
    engine.set_policies({policy("p", std::move(paths))});
    engine.tick(now, log);  // starts the first interval
  }
  // Advances one interval after `events` reported evidence for it.
  void step(const std::function<void()>& events = {}) {
    if (events) events();
    now += uint64_t(params.interval_us) * kUs;
    engine.tick(now, log);
  }
  void run_for(uint64_t ns, const std::function<void()>& events = {}) {
    const uint64_t end = now + ns;
    while (now < end) step(events);
  }
  double factor(uint16_t id) const {
    for (const PathView& v : engine.paths())
      if (v.path_id == id) return v.factor;
    ADD_FAILURE() << "no path " << id;
    return -1;
  }
  size_t decisions_for(uint16_t id) const {
    size_t n = 0;
    for (const Decision& d : log) n += d.path_id == id;
    return n;
  }
  bool some_usable() const {
    for (const PathView& v : engine.paths())
      if (v.factor > 0) return true;
    return false;
  }
};

TEST(EngineParams, DefaultsAreSoundAndBadFieldsAreNamed) {
  EXPECT_FALSE(check(Params{}));
  Params p;
  p.alpha = 0;
  ASSERT_TRUE(check(p));
  EXPECT_EQ(check(p)->field, "alpha");
  p = {};
  p.readmit_threshold = p.exclude_threshold;  // no hysteresis
  ASSERT_TRUE(check(p));
  EXPECT_EQ(check(p)->field, "readmit-threshold");
  p = {};
  p.decrease = 1.0;
  EXPECT_EQ(check(p)->field, "decrease");
  p = {};
  p.interval_us = 0;
  EXPECT_EQ(check(p)->field, "interval-us");
}

// A fallback blame shares one CNP between lists by use: each loses that share of a step.
TEST(Engine, PartialEvidenceGivesAPartialDecrease) {
  Fixture f;
  f.step([&] {
    f.engine.report(1, 0.75);
    f.engine.report(2, 0.25);
  });
  EXPECT_NEAR(f.factor(1), std::pow(0.5, 0.75), 1e-12);
  EXPECT_NEAR(f.factor(2), std::pow(0.5, 0.25), 1e-12);
  EXPECT_DOUBLE_EQ(f.factor(3), 1.0);
  // Small shares arriving within one decrease gap add up (capped at one full step).
  f.run_for(f.params.decrease_gap_us * kUs - f.params.interval_us * kUs,
            [&] { f.engine.report(2, 0.1); });
  const double before = f.factor(2);
  f.step([&] { f.engine.report(2, 0.1); });
  EXPECT_NEAR(f.factor(2), before * std::pow(0.5, 0.5), 1e-9);
}

TEST(Engine, NoEvidenceNoDecision) {
  Fixture f;
  f.run_for(50 * kMs);
  EXPECT_TRUE(f.log.empty());
  EXPECT_EQ(f.engine.factors("p"), (std::vector<double>{1, 1, 1}));
}

TEST(Engine, SingleCongestedPathDecreasesWithinOneIntervalAndOthersKeepTheirs) {
  Fixture f;
  // One CNP: the decision comes at the end of the interval it arrived in.
  f.step([&] { EXPECT_TRUE(f.engine.report(1, 1.0)); });
  ASSERT_EQ(f.log.size(), 1u);
  EXPECT_EQ(f.log[0].policy, "p");
  EXPECT_EQ(f.log[0].segment_list, "a");
  EXPECT_EQ(f.log[0].path_id, 1);
  EXPECT_EQ(f.log[0].reason, Reason::congestion);
  EXPECT_DOUBLE_EQ(f.log[0].old_factor, 1.0);
  EXPECT_DOUBLE_EQ(f.log[0].new_factor, 0.5);
  EXPECT_EQ(f.log[0].at_ns, f.now);
  // Moderate sustained congestion (2 CNPs per interval: score ~2 < exclusion 4): decreases
  // at most once per decrease gap, down to the floor, never excluded.
  f.run_for(20 * kMs, [&] { f.engine.report(1, 2.0); });
  EXPECT_DOUBLE_EQ(f.factor(1), f.params.min_factor);
  EXPECT_EQ(f.decisions_for(1), 6u);  // 1 -> 1/2 -> ... -> 1/64
  for (size_t i = 1; i < f.log.size(); ++i)
    EXPECT_GE(f.log[i].at_ns - f.log[i - 1].at_ns, f.params.decrease_gap_us * kUs);
  EXPECT_EQ(f.decisions_for(2), 0u);
  EXPECT_EQ(f.decisions_for(3), 0u);
  EXPECT_DOUBLE_EQ(f.factor(2), 1.0);
  EXPECT_DOUBLE_EQ(f.factor(3), 1.0);
}

TEST(Engine, SingleHeavilyCongestedPathIsExcluded) {
  Fixture f;
  f.run_for(2 * kMs, [&] { f.engine.report(2, 8.0); });
  EXPECT_EQ(f.factor(2), 0.0);
  bool excluded = false;
  for (const Decision& d : f.log) excluded |= d.path_id == 2 && d.reason == Reason::excluded;
  EXPECT_TRUE(excluded);
  // EWMA with alpha 1/4 crosses 4 on the third interval of 8 events: 2, 3.5, 4.625.
  EXPECT_EQ(f.log.back().reason, Reason::excluded);
  EXPECT_EQ(f.log.back().at_ns, 1 * kMs + 3 * 100 * kUs);
  EXPECT_EQ(f.factor(1), 1.0);
  EXPECT_EQ(f.factor(3), 1.0);
}

TEST(Engine, TwoCongestedPathsLeaveTheThird) {
  Fixture f;
  f.run_for(2 * kMs, [&] {
    f.engine.report(1, 8.0);
    f.engine.report(3, 10.0);
  });
  EXPECT_EQ(f.factor(1), 0.0);
  EXPECT_EQ(f.factor(3), 0.0);
  EXPECT_EQ(f.factor(2), 1.0);
  EXPECT_EQ(f.decisions_for(2), 0u);
}

TEST(Engine, AllCongestedNeverEmptiesThePolicyAndKeepsShares) {
  Fixture f;
  f.run_for(50 * kMs, [&] {
    f.engine.report(1, 9.0);
    f.engine.report(2, 9.0);
    f.engine.report(3, 9.0);
    EXPECT_TRUE(f.some_usable());
  });
  // Nowhere better to go: nobody is excluded, all sit at the floor (equal shares).
  for (uint16_t id : {1, 2, 3}) EXPECT_DOUBLE_EQ(f.factor(id), f.params.min_factor) << id;
  for (const Decision& d : f.log) EXPECT_NE(d.reason, Reason::excluded);
}

TEST(Engine, ExclusionFailsOverToBackupButNeverRemovesTheLastList) {
  Fixture f({{"primary", 10, 1, false}, {"backup", 11, 1, true}});
  f.run_for(2 * kMs, [&] { f.engine.report(10, 8.0); });
  EXPECT_EQ(f.factor(10), 0.0);  // traffic fails over to the backup list
  EXPECT_EQ(f.factor(11), 1.0);
  // Now the backup congests too: it is the last usable list, so it stays (at the floor).
  f.run_for(10 * kMs, [&] {
    f.engine.report(10, 8.0);
    f.engine.report(11, 8.0);
  });
  EXPECT_EQ(f.factor(10), 0.0);
  EXPECT_DOUBLE_EQ(f.factor(11), f.params.min_factor);
  bool kept = false;
  for (const Decision& d : f.log) kept |= d.reason == Reason::last_path_kept;
  EXPECT_TRUE(kept);
}

TEST(Engine, WeightZeroListIsNotAnAlternative) {
  Fixture f({{"a", 1, 1, false}, {"idle", 2, 0, false}});
  f.run_for(5 * kMs, [&] { f.engine.report(1, 8.0); });
  EXPECT_GT(f.factor(1), 0.0);  // "idle" carries nothing: excluding "a" would empty the policy
}

TEST(Engine, RecoveryOnlyAfterHoldDownThenAdditiveSteps) {
  Fixture f;
  f.run_for(3 * kMs, [&] { f.engine.report(1, 1.0); });  // decreases to 1/2, 1/4, ...
  const double low = f.factor(1);
  ASSERT_LT(low, 0.25);
  const uint64_t last_congestion = f.now;
  f.log.clear();
  // Quiet from now on. Nothing may rise before the hold-down has passed.
  f.run_for(60 * kMs);
  ASSERT_FALSE(f.log.empty());
  EXPECT_GE(f.log.front().at_ns - last_congestion, f.params.hold_down_us * kUs);
  EXPECT_LT(f.log.front().at_ns - last_congestion,
            f.params.hold_down_us * kUs + f.params.interval_us * kUs + 1);
  double prev = low;
  for (size_t i = 0; i < f.log.size(); ++i) {
    const Decision& d = f.log[i];
    EXPECT_EQ(d.reason, Reason::recovery);
    EXPECT_NEAR(d.new_factor, std::min(1.0, prev + f.params.recovery_step), 1e-12);
    if (i) {
      EXPECT_GE(d.at_ns - f.log[i - 1].at_ns, f.params.recovery_period_us * kUs);
    }
    prev = d.new_factor;
  }
  EXPECT_DOUBLE_EQ(f.factor(1), 1.0);
}

TEST(Engine, ExcludedPathReadmittedAfterHoldDownWithLowScore) {
  Fixture f;
  f.run_for(1 * kMs, [&] { f.engine.report(1, 10.0); });
  ASSERT_EQ(f.factor(1), 0.0);
  f.log.clear();
  // Stray evidence while excluded (CNPs in flight) keeps it out and restarts the hold-down.
  f.step([&] { f.engine.report(1, 1.0); });
  const uint64_t last = f.now;
  f.run_for(40 * kMs);
  ASSERT_FALSE(f.log.empty());
  EXPECT_EQ(f.log.front().reason, Reason::readmitted);
  EXPECT_DOUBLE_EQ(f.log.front().new_factor, f.params.readmit_factor);
  EXPECT_GE(f.log.front().at_ns - last, f.params.hold_down_us * kUs);
  EXPECT_LE(f.log.front().score, f.params.readmit_threshold);
  EXPECT_DOUBLE_EQ(f.factor(1), 1.0);
}

// Flapping: congestion follows the traffic. Whichever path carries the larger share gets the
// CNPs (a pathological closed loop: shifting load moves the hot spot). Without damping an
// engine would swap the two every interval (10000 changes per second); here the hold-down,
// hysteresis, decrease gap and hold-down backoff bound the changes, and no path is ever
// raised within a hold-down of being lowered.
TEST(Engine, FlappingInputDoesNotOscillate) {
  Fixture f({{"a", 1, 1, false}, {"b", 2, 1, false}});
  const uint64_t duration = 1000 * kMs;
  f.run_for(duration, [&] {
    const double fa = f.factor(1), fb = f.factor(2);
    ASSERT_TRUE(fa > 0 || fb > 0);
    const double share_a = fa / (fa + fb);
    if (share_a >= 0.5)
      f.engine.report(1, 10.0 * share_a);
    else
      f.engine.report(2, 10.0 * (1 - share_a));
  });
  std::map<uint16_t, uint64_t> last_lowered;
  size_t direction_changes = 0;
  std::map<uint16_t, int> last_dir;
  for (const Decision& d : f.log) {
    const int dir = d.new_factor < d.old_factor ? -1 : 1;
    if (dir < 0) last_lowered[d.path_id] = d.at_ns;
    if (dir > 0 && last_lowered.count(d.path_id)) {
      EXPECT_GE(d.at_ns - last_lowered[d.path_id], f.params.hold_down_us * kUs);
    }
    if (last_dir.count(d.path_id) && last_dir[d.path_id] != dir) ++direction_changes;
    last_dir[d.path_id] = dir;
  }
  std::printf("flapping: %zu factor changes, %zu direction reversals in %llu ms\n", f.log.size(),
              direction_changes, (unsigned long long)(duration / kMs));
  // Each reversal needs a quiet hold-down on that path, and a failed increase doubles it
  // (5, 10, 20, ... 320 ms): at most 8 reversals per path in one second.
  size_t max_reversals_per_path = 0;
  for (uint64_t t = 0, h = f.params.hold_down_us * kUs; t + h <= duration;
       t += h, h = std::min<uint64_t>(2 * h, f.params.max_hold_down_us * kUs))
    ++max_reversals_per_path;
  EXPECT_LE(direction_changes, 2 * max_reversals_per_path);
  EXPECT_LT(f.log.size(), 100u);  // vs 10000 intervals
}

// Open-loop flapping: the hot spot alternates between the two paths every interval.
TEST(Engine, AlternatingEvidenceSettlesWithoutPingPong) {
  Fixture f({{"a", 1, 1, false}, {"b", 2, 1, false}});
  bool odd = false;
  f.run_for(200 * kMs, [&] {
    f.engine.report(odd ? 1 : 2, 8.0);
    odd = !odd;
    ASSERT_TRUE(f.some_usable());
  });
  // Both are equally congested: neither may be taken out for the other.
  size_t exclusions = 0;
  for (const Decision& d : f.log) exclusions += d.reason == Reason::excluded;
  EXPECT_LE(exclusions, 1u);
  EXPECT_LE(f.log.size(), 20u) << "factor changes under alternating input";
}

TEST(Engine, ExplicitDownAndUpApplyAtOnce) {
  Fixture f;
  std::vector<Decision> out;
  ASSERT_TRUE(f.engine.set_admin(2, false, f.now + 1, out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].reason, Reason::explicit_down);
  EXPECT_EQ(out[0].new_factor, 0.0);
  EXPECT_EQ(f.factor(2), 0.0);
  // Down again: nothing changes.
  out.clear();
  EXPECT_TRUE(f.engine.set_admin(2, false, f.now + 2, out));
  EXPECT_TRUE(out.empty());
  // The algorithm never brings it back, whatever the time or the scores.
  f.run_for(50 * kMs, [&] { f.engine.report(2, 3.0); });
  EXPECT_EQ(f.factor(2), 0.0);
  EXPECT_EQ(f.decisions_for(2), 0u);
  // Explicit down may empty a policy: the controller knows the paths are gone.
  EXPECT_TRUE(f.engine.set_admin(1, false, f.now, out));
  EXPECT_TRUE(f.engine.set_admin(3, false, f.now, out));
  EXPECT_EQ(f.engine.factors("p"), (std::vector<double>{0, 0, 0}));
  // Up: factor 1 immediately, score cleared.
  out.clear();
  ASSERT_TRUE(f.engine.set_admin(2, true, f.now, out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].reason, Reason::explicit_up);
  EXPECT_EQ(f.factor(2), 1.0);
  for (const PathView& v : f.engine.paths()) {
    if (v.path_id == 2) {
      EXPECT_EQ(v.score, 0.0);
    }
  }
  EXPECT_FALSE(f.engine.set_admin(99, false, f.now, out));
}

// Explicit down of the last usable list while its sibling is excluded by congestion: the
// sibling comes back at the minimum factor at once (congestion never empties a policy).
TEST(Engine, ExplicitDownReadmitsAnExcludedSibling) {
  Fixture f({{"a", 1, 1, false}, {"b", 2, 1, false}});
  f.run_for(20 * kMs, [&] { f.engine.report(1, 10.0); });
  ASSERT_EQ(f.factor(1), 0.0) << "a should have been excluded by congestion";
  ASSERT_GT(f.factor(2), 0.0);
  std::vector<Decision> out;
  ASSERT_TRUE(f.engine.set_admin(2, false, f.now + 1, out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].reason, Reason::explicit_down);
  EXPECT_EQ(out[1].reason, Reason::last_path_kept);
  EXPECT_EQ(out[1].path_id, 1);
  EXPECT_EQ(f.factor(1), f.params.min_factor);
  EXPECT_EQ(f.factor(2), 0.0);
}

// down_mask tells down lists (balanced mode releases their flows at once) from lists
// excluded for congestion; a probe down of an excluded list is published as a change.
TEST(Engine, DownMaskNamesDownListsNotExcludedOnes) {
  Fixture f;
  f.run_for(20 * kMs, [&] { f.engine.report(1, 10.0); });
  ASSERT_EQ(f.factor(1), 0.0) << "a should have been excluded by congestion";
  EXPECT_EQ(f.engine.down_mask("p"), 0u);
  std::vector<Decision> out;
  ASSERT_TRUE(f.engine.set_admin(2, false, f.now + 1, out));
  EXPECT_EQ(f.engine.down_mask("p"), 0b010u);
  ASSERT_TRUE(f.engine.set_probe(1, false, f.now + 1, out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].reason, Reason::probe_down);
  EXPECT_EQ(out[1].path_id, 1);
  EXPECT_EQ(f.engine.down_mask("p"), 0b011u);
  // The last usable list stays in service when probes fail: not down for placement.
  ASSERT_TRUE(f.engine.set_probe(3, false, f.now + 1, out));
  EXPECT_GT(f.factor(3), 0.0);
  EXPECT_EQ(f.engine.down_mask("p"), 0b011u);
  ASSERT_TRUE(f.engine.set_admin(2, true, f.now + 2, out));
  // b back by the controller: c stays in service until a probe brings a list back.
  EXPECT_EQ(f.engine.down_mask("p"), 0b001u);
  EXPECT_EQ(f.engine.down_mask("nope"), 0u);
}

TEST(Engine, ExplicitUpLiftsAnExclusion) {
  Fixture f;
  f.run_for(1 * kMs, [&] { f.engine.report(1, 10.0); });
  ASSERT_EQ(f.factor(1), 0.0);
  std::vector<Decision> out;
  ASSERT_TRUE(f.engine.set_admin(1, true, f.now, out));
  EXPECT_EQ(f.factor(1), 1.0);
}

TEST(Engine, UnknownPathEvidenceIsCounted) {
  Fixture f;
  EXPECT_FALSE(f.engine.report(77, 1.0));
  EXPECT_EQ(f.engine.counters().unknown_path, 1u);
}

TEST(Engine, ReshapingKeepsStateByPathId) {
  Fixture f;
  f.step([&] { f.engine.report(2, 1.0); });
  ASSERT_EQ(f.factor(2), 0.5);
  // b moves to a new policy, a disappears, d appears.
  f.engine.set_policies(
      {policy("p", {{"c", 3, 1, false}, {"d", 4, 1, false}}), policy("q", {{"b", 2, 5, false}})});
  EXPECT_EQ(f.engine.factors("q"), (std::vector<double>{0.5}));
  EXPECT_EQ(f.engine.factors("p"), (std::vector<double>{1, 1}));
  EXPECT_TRUE(f.engine.factors("gone").empty());
  EXPECT_FALSE(f.engine.report(1, 1.0));
}

TEST(Engine, LongGapDecaysScoreAsIfIntervalsPassed) {
  Fixture f;
  f.step([&] { f.engine.report(1, 4.0); });  // score 1
  f.now += 10 * f.params.interval_us * kUs;  // the daemon was late: 10 intervals at once
  f.engine.tick(f.now, f.log);
  for (const PathView& v : f.engine.paths()) {
    if (v.path_id == 1) {
      EXPECT_NEAR(v.score, std::pow(0.75, 10), 1e-12);
    }
  }
}

// Engine time per interval with many policies (the daemon's budget is well under 100 us).
TEST(Engine, TickCost) {
  std::vector<PolicySpec> pols;
  for (int i = 0; i < 256; ++i) {
    PolicySpec p;
    p.name = "p";
    p.name += std::to_string(i);
    for (int j = 0; j < 4; ++j) {
      PathSpec path;
      path.name = "l";
      path.name += std::to_string(j);
      path.path_id = uint16_t(i * 4 + j);
      p.paths.push_back(path);
    }
    pols.push_back(p);
  }
  Engine e;
  e.set_policies(pols);
  std::vector<Decision> out;
  uint64_t now = 0;
  e.tick(now, out);
  const int kTicks = 2000;
  const auto t0 = std::chrono::steady_clock::now();
  size_t decisions = 0;
  for (int t = 0; t < kTicks; ++t) {
    for (int k = 0; k < 32; ++k) e.report(uint16_t((t * 7 + k * 13) % 1024), 1.0);
    now += 100 * kUs;
    out.clear();
    e.tick(now, out);
    decisions += out.size();
  }
  const double ns = double(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
          .count());
  std::printf(
      "engine: 1024 paths, 32 reports/interval: %.1f us per interval, %zu decisions, "
      "%.0f ns per decision (incl. scoring)\n",
      ns / kTicks / 1000, decisions, decisions ? ns / double(decisions) : 0.0);
  EXPECT_GT(decisions, 0u);
}

}  // namespace
}  // namespace srv6gw::engine
