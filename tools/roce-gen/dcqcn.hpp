// SPDX-License-Identifier: BSD-3-Clause
// DCQCN reaction point (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments",
// SIGCOMM 2015, section 3.1): the sender side of RoCEv2 congestion control as an RNIC runs it
// per queue pair. No sockets, no clock of its own: the caller passes the time (ns, any
// monotonic origin) with every event, so tests drive it through exact sequences and the
// closed-loop generator (closed_loop.hpp) drives it from CLOCK_MONOTONIC.
//
// The state machine, in the paper's names:
//   on a CNP (at most one cut per `rate_reduce_period_ns`):
//       R_T = R_C;  R_C = R_C (1 - alpha/2);  alpha = (1 - g) alpha + g;
//       timer, byte counter, T and BC restart at 0
//   every K (`alpha_timer_ns`) without a CNP:   alpha = (1 - g) alpha
//   increase event: the timer expires every T (`increase_timer_ns`), or B bytes
//   (`byte_counter_bytes`) were sent since the last event of the byte counter; with the
//   counts T and BC before the event (then T or BC + 1), so the first F events recover fast:
//       max(T, BC) <  F:          fast recovery    R_C = (R_T + R_C) / 2
//       min(T, BC) >= F:          hyper increase   R_T += i R_HAI (i = min(T, BC) - F + 1),
//                                                  R_C = (R_T + R_C) / 2
//       otherwise:                additive         R_T += R_AI, R_C = (R_T + R_C) / 2
//   R_C and R_T stay within [min_rate, line_rate].
// The hyper-increase step i follows QCN's hyper-active increase, which DCQCN inherits
// (the paper names the stage; QCN defines i).
#pragma once

#include <cstdint>

namespace srv6gw::rocegen {

struct DcqcnParams {
  double line_rate_bps = 40e9;                // R_line: the NIC's rate, where every QP starts
  double min_rate_bps = 10e6;                 // rpg_min_rate: a cut never goes below it
  double g = 1.0 / 256;                       // alpha gain (paper: 1/256)
  double initial_alpha = 1.0;                 // RNICs start at 1 (initial_alpha_value 1023/1023)
  uint64_t alpha_timer_ns = 55000;            // K (paper: 55 us)
  uint64_t increase_timer_ns = 55000;         // T, rpg_time_reset (paper: 55 us; RNICs: 300 us)
  uint64_t byte_counter_bytes = 10ull << 20;  // B, rpg_byte_reset (paper: 10 MB)
  uint32_t fast_recovery_steps = 5;           // F, rpg_threshold (paper: 5)
  double ai_rate_bps = 40e6;                  // R_AI, rpg_ai_rate (paper: 40 Mbps)
  double hai_rate_bps = 200e6;                // R_HAI, rpg_hai_rate (DCQCN's simulator: 200 Mbps)
  uint64_t rate_reduce_period_ns = 0;         // rate_reduce_monitor_period: min gap between cuts

  // The paper's values, with rates multiplied by `rate_scale` and times divided by it (an
  // emulated fabric 1000x slower than 40 Gbit/s: rate_scale 1e-3, so 55 us becomes 55 ms).
  // Bytes (B) are rate x time, so they keep the paper's value. `line_rate_bps` is the
  // emulated NIC's rate (not scaled again).
  static DcqcnParams paper_scaled(double line_rate_bps, double rate_scale);

  // Empty when usable, else the offending field.
  const char* invalid_field() const;
};

enum class DcqcnStage : uint8_t { line_rate, fast_recovery, additive_increase, hyper_increase };
const char* to_string(DcqcnStage stage);

struct DcqcnCounters {
  uint64_t cnps = 0;           // CNPs seen
  uint64_t rate_cuts = 0;      // CNPs that cut the rate (others fell in the reduce period)
  uint64_t alpha_decays = 0;   // K expirations without a CNP
  uint64_t timer_events = 0;   // T expirations
  uint64_t byte_events = 0;    // byte counter expirations
  uint64_t fast_recovery = 0;  // increase events per stage
  uint64_t additive_increase = 0;
  uint64_t hyper_increase = 0;
};

class DcqcnReactionPoint {
 public:
  // Starts at line rate with alpha = initial_alpha, timers armed at `now_ns`.
  DcqcnReactionPoint(const DcqcnParams& params, uint64_t now_ns);

  // A CNP for this QP arrived at `now_ns` (runs due timers first).
  void on_cnp(uint64_t now_ns);
  // `bytes` left at `now_ns` (byte counter; runs due timers first).
  void on_sent(uint64_t bytes, uint64_t now_ns);
  // Runs every timer event due by `now_ns`, in time order.
  void advance(uint64_t now_ns);

  double rate_bps() const { return current_; }
  double target_bps() const { return target_; }
  double alpha() const { return alpha_; }
  uint32_t timer_count() const { return timer_count_; }  // T
  uint32_t byte_count() const { return byte_count_; }    // BC
  // The stage the next increase event will apply (line_rate: nothing left to recover).
  DcqcnStage stage() const;
  const DcqcnCounters& counters() const { return counters_; }
  const DcqcnParams& params() const { return params_; }
  // The earliest time a timer event is due (callers sleep until then at most).
  uint64_t next_timer_ns() const;

 private:
  void increase();
  void clamp();

  DcqcnParams params_;
  double current_;  // R_C
  double target_;   // R_T
  double alpha_;
  uint32_t timer_count_ = 0;
  uint32_t byte_count_ = 0;
  uint64_t bytes_since_event_ = 0;
  uint64_t next_alpha_ns_;
  uint64_t next_increase_ns_;
  uint64_t last_cut_ns_ = 0;
  bool cut_once_ = false;
  DcqcnCounters counters_;
};

}  // namespace srv6gw::rocegen
