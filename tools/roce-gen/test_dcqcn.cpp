// SPDX-License-Identifier: BSD-3-Clause
// The DCQCN reaction point against the paper's equations (Zhu et al., SIGCOMM 2015, 3.1),
// computed here independently in closed form: rate and alpha after k CNPs, alpha's decay,
// fast recovery halving the distance to R_T, additive and hyper increase of R_T.
#include <gtest/gtest.h>

#include <cmath>

#include "roce-gen/dcqcn.hpp"

namespace srv6gw::rocegen {
namespace {

constexpr uint64_t kUs = 1000;

// Round numbers, timers far apart so that each test controls which one fires.
DcqcnParams test_params() {
  DcqcnParams p;
  p.line_rate_bps = 40e9;
  p.min_rate_bps = 1e6;
  p.g = 1.0 / 256;
  p.initial_alpha = 1.0;
  p.alpha_timer_ns = 55 * kUs;
  p.increase_timer_ns = 300 * kUs;
  p.byte_counter_bytes = 10ull << 20;
  p.fast_recovery_steps = 5;
  p.ai_rate_bps = 40e6;
  p.hai_rate_bps = 200e6;
  return p;
}

TEST(Dcqcn, StartsAtLineRate) {
  DcqcnReactionPoint rp(test_params(), 0);
  EXPECT_DOUBLE_EQ(rp.rate_bps(), 40e9);
  EXPECT_DOUBLE_EQ(rp.alpha(), 1.0);
  EXPECT_EQ(rp.stage(), DcqcnStage::line_rate);
  rp.advance(10'000 * kUs);  // nothing to recover: the rate stays
  EXPECT_DOUBLE_EQ(rp.rate_bps(), 40e9);
}

// k back-to-back CNPs (no timer fires between them): R_{i+1} = R_i (1 - a_i/2),
// a_{i+1} = (1-g) a_i + g. With a_0 = 1, alpha stays 1 and R_k = R_0 / 2^k.
TEST(Dcqcn, RateAfterKCnpsAlphaOne) {
  DcqcnReactionPoint rp(test_params(), 0);
  for (int k = 1; k <= 8; ++k) {
    rp.on_cnp(uint64_t(k));  // 1 ns apart: no timer
    EXPECT_NEAR(rp.rate_bps(), 40e9 / std::pow(2.0, k), 1e-3) << k;
    EXPECT_NEAR(rp.alpha(), 1.0, 1e-12);
  }
  EXPECT_EQ(rp.counters().rate_cuts, 8u);
  EXPECT_EQ(rp.stage(), DcqcnStage::fast_recovery);
}

// With a_0 = 0.25: a_i = 1 - (1 - a_0)(1-g)^i, R_k = R_0 prod_{i<k} (1 - a_i/2).
TEST(Dcqcn, RateAfterKCnpsClosedForm) {
  DcqcnParams p = test_params();
  p.initial_alpha = 0.25;
  DcqcnReactionPoint rp(p, 0);
  double rate = p.line_rate_bps;
  for (int k = 0; k < 20; ++k) {
    const double a_k = 1 - (1 - 0.25) * std::pow(1 - p.g, k);
    EXPECT_NEAR(rp.alpha(), a_k, 1e-12) << k;
    const double before = rp.rate_bps();
    rp.on_cnp(uint64_t(k + 1));
    rate *= 1 - a_k / 2;
    EXPECT_NEAR(rp.rate_bps() / rate, 1.0, 1e-12) << k;
    EXPECT_DOUBLE_EQ(rp.target_bps(), before);  // R_T = R_C before the cut
  }
}

// No CNP for n periods K: alpha = alpha_0 (1-g)^n.
TEST(Dcqcn, AlphaDecaysPerPeriodWithoutCnp) {
  DcqcnParams p = test_params();
  p.increase_timer_ns = 1'000'000'000'000ull;  // keep increases out of the way
  DcqcnReactionPoint rp(p, 0);
  rp.on_cnp(0);  // alpha = 1 (stays 1), timer restarts at 0
  const double a0 = rp.alpha();
  rp.advance(55 * kUs - 1);
  EXPECT_DOUBLE_EQ(rp.alpha(), a0);
  for (int n = 1; n <= 50; ++n) {
    rp.advance(uint64_t(n) * 55 * kUs);
    EXPECT_NEAR(rp.alpha(), a0 * std::pow(1 - p.g, n), 1e-12) << n;
  }
  EXPECT_EQ(rp.counters().alpha_decays, 50u);
  // A CNP restarts the alpha timer: the next decay is K after it.
  const uint64_t t = 50 * 55 * kUs + 10 * kUs;
  rp.on_cnp(t);
  const double after_cnp = rp.alpha();
  rp.advance(t + 55 * kUs - 1);
  EXPECT_DOUBLE_EQ(rp.alpha(), after_cnp);
  rp.advance(t + 55 * kUs);
  EXPECT_NEAR(rp.alpha(), after_cnp * (1 - p.g), 1e-12);
}

// Timer-driven recovery after one cut from R_0 (alpha 1: R_C = R_0/2, R_T = R_0):
// fast recovery for F events, R_C = R_T - (R_T - R_C0) / 2^j; then additive increase,
// R_T = R_0 + m R_AI and R_C = (R_T + R_C) / 2.
TEST(Dcqcn, TimerDrivenFastRecoveryThenAdditive) {
  DcqcnParams p = test_params();
  p.line_rate_bps = 100e9;  // room above R_0 for R_T to grow
  DcqcnReactionPoint rp(p, 0);
  rp.on_cnp(0);  // 100G -> 50G
  rp.on_cnp(1);  // 50G -> 25G, R_T = 50G
  const double r_t = 50e9, r_c0 = 25e9;
  ASSERT_DOUBLE_EQ(rp.target_bps(), r_t);
  ASSERT_DOUBLE_EQ(rp.rate_bps(), r_c0);
  const uint64_t T = p.increase_timer_ns;
  for (uint32_t j = 1; j <= p.fast_recovery_steps; ++j) {
    EXPECT_EQ(rp.stage(), DcqcnStage::fast_recovery);
    rp.advance(1 + j * T);
    EXPECT_EQ(rp.timer_count(), j);
    EXPECT_NEAR(rp.rate_bps(), r_t - (r_t - r_c0) / std::pow(2.0, j), 1.0) << j;
    EXPECT_DOUBLE_EQ(rp.target_bps(), r_t);
  }
  double r_c = rp.rate_bps();
  for (uint32_t m = 1; m <= 10; ++m) {
    EXPECT_EQ(rp.stage(), DcqcnStage::additive_increase);
    rp.advance(1 + (p.fast_recovery_steps + m) * T);
    const double target = r_t + m * p.ai_rate_bps;
    r_c = (target + r_c) / 2;
    EXPECT_NEAR(rp.target_bps(), target, 1.0) << m;
    EXPECT_NEAR(rp.rate_bps(), r_c, 1.0) << m;
  }
  EXPECT_EQ(rp.counters().fast_recovery, p.fast_recovery_steps);
  EXPECT_EQ(rp.counters().additive_increase, 10u);
  EXPECT_EQ(rp.counters().hyper_increase, 0u);
}

// Byte counter alone (timer far away) drives the same stages; with both T and BC >= F,
// hyper increase adds i R_HAI to R_T, i = min(T, BC) - F + 1.
TEST(Dcqcn, ByteCounterAndHyperIncrease) {
  DcqcnParams p = test_params();
  p.line_rate_bps = 100e9;
  p.increase_timer_ns = 1'000'000 * kUs;  // 1 s
  DcqcnReactionPoint rp(p, 0);
  rp.on_cnp(0);
  rp.on_cnp(1);  // R_C 25G, R_T 50G
  const uint64_t B = p.byte_counter_bytes;
  double r_t = 50e9, r_c = 25e9;
  for (uint32_t j = 1; j <= 7; ++j) {  // 5 fast recovery + 2 additive, bytes only
    rp.on_sent(B, 2);
    EXPECT_EQ(rp.byte_count(), j);
    EXPECT_EQ(rp.timer_count(), 0u);
    if (j > p.fast_recovery_steps) r_t += p.ai_rate_bps;
    r_c = (r_t + r_c) / 2;
    EXPECT_NEAR(rp.rate_bps(), r_c, 1.0) << j;
    EXPECT_NEAR(rp.target_bps(), r_t, 1.0) << j;
  }
  // Now the timer: events 1..5 see T = 0..4 (< F, BC = 7 >= F): additive; events 6, 7, 8
  // see T = 5, 6, 7: hyper with i = 1, 2, 3.
  for (uint32_t t = 1; t <= 8; ++t) {
    rp.advance(1 + t * p.increase_timer_ns);
    const uint32_t before = t - 1;
    if (before < p.fast_recovery_steps) {
      r_t += p.ai_rate_bps;
    } else {
      r_t += double(before - p.fast_recovery_steps + 1) * p.hai_rate_bps;
    }
    r_c = (r_t + r_c) / 2;
    EXPECT_NEAR(rp.target_bps(), r_t, 1.0) << t;
    EXPECT_NEAR(rp.rate_bps(), r_c, 1.0) << t;
  }
  EXPECT_EQ(rp.counters().hyper_increase, 3u);
  EXPECT_EQ(rp.stage(), DcqcnStage::hyper_increase);
}

// A CNP restarts T and BC: recovery starts over in fast recovery.
TEST(Dcqcn, CnpRestartsRecovery) {
  DcqcnReactionPoint rp(test_params(), 0);
  rp.on_cnp(0);
  rp.advance(7 * 300 * kUs);
  EXPECT_EQ(rp.stage(), DcqcnStage::additive_increase);
  const double before = rp.rate_bps();
  rp.on_cnp(7 * 300 * kUs + 1);
  EXPECT_EQ(rp.timer_count(), 0u);
  EXPECT_EQ(rp.stage(), DcqcnStage::fast_recovery);
  EXPECT_DOUBLE_EQ(rp.target_bps(), before);
  EXPECT_LT(rp.rate_bps(), before);
}

TEST(Dcqcn, RecoversToLineRateAndClamps) {
  DcqcnParams p = test_params();
  p.hai_rate_bps = 10e9;
  DcqcnReactionPoint rp(p, 0);
  for (int i = 0; i < 40; ++i) rp.on_cnp(uint64_t(i));
  EXPECT_DOUBLE_EQ(rp.rate_bps(), p.min_rate_bps);  // never below the minimum
  uint64_t t = 40;
  for (int i = 0; i < 2000 && rp.stage() != DcqcnStage::line_rate; ++i) {
    t += p.increase_timer_ns;
    rp.on_sent(p.byte_counter_bytes, t);
  }
  EXPECT_EQ(rp.stage(), DcqcnStage::line_rate);
  EXPECT_DOUBLE_EQ(rp.rate_bps(), p.line_rate_bps);  // never above line rate
  EXPECT_DOUBLE_EQ(rp.target_bps(), p.line_rate_bps);
}

TEST(Dcqcn, RateReducePeriodCutsOncePerPeriod) {
  DcqcnParams p = test_params();
  p.rate_reduce_period_ns = 50 * kUs;
  DcqcnReactionPoint rp(p, 0);
  rp.on_cnp(0);
  rp.on_cnp(10 * kUs);  // inside the period: counted, no cut
  EXPECT_DOUBLE_EQ(rp.rate_bps(), 20e9);
  rp.on_cnp(50 * kUs);
  EXPECT_DOUBLE_EQ(rp.rate_bps(), 10e9);
  EXPECT_EQ(rp.counters().cnps, 3u);
  EXPECT_EQ(rp.counters().rate_cuts, 2u);
}

TEST(Dcqcn, PaperScaled) {
  const DcqcnParams p = DcqcnParams::paper_scaled(40e6, 1e-3);
  EXPECT_EQ(p.invalid_field(), nullptr);
  EXPECT_DOUBLE_EQ(p.line_rate_bps, 40e6);
  EXPECT_EQ(p.alpha_timer_ns, 55'000'000u);  // 55 us -> 55 ms
  EXPECT_EQ(p.increase_timer_ns, 55'000'000u);
  EXPECT_DOUBLE_EQ(p.ai_rate_bps, 40e3);  // 40 Mbit/s -> 40 kbit/s
  EXPECT_DOUBLE_EQ(p.hai_rate_bps, 200e3);
  EXPECT_EQ(p.byte_counter_bytes, 10ull << 20);  // bytes = rate x time: unchanged
  EXPECT_DOUBLE_EQ(p.g, 1.0 / 256);
  EXPECT_EQ(p.fast_recovery_steps, 5u);
  DcqcnParams bad = p;
  bad.g = 0;
  EXPECT_STREQ(bad.invalid_field(), "g");
  bad = p;
  bad.min_rate_bps = 1e9;
  EXPECT_STREQ(bad.invalid_field(), "min_rate_bps");
}

}  // namespace
}  // namespace srv6gw::rocegen
