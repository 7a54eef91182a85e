// SPDX-License-Identifier: BSD-3-Clause
// Parameters of the local SR engine (engine.hpp has the algorithm they drive) and their
// checks. Header-only and dependency-free: the configuration model embeds Params (YANG
// container /srv6gw:gateway/engine) and config::validate() reuses check().
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace srv6gw::engine {

struct Params {
  bool enabled = true;                 // the daemon runs the engine (off: factors stay as they are)
  uint32_t interval_us = 100;          // scoring interval (the daemon drains the ring this often)
  double alpha = 0.25;                 // EWMA weight of the newest interval, (0, 1]
  double decrease = 0.5;               // multiplicative decrease on congestion, (0, 1)
  double min_factor = 1.0 / 64;        // floor of decreases (> 0; only exclusion reaches 0)
  uint32_t decrease_gap_us = 500;      // at most one decrease per path per this time
  double exclude_threshold = 4.0;      // score (evidence per interval, averaged) that excludes
  double readmit_threshold = 0.25;     // score at or below which an excluded path may return
  double readmit_factor = 0.25;        // factor an excluded path returns with
  uint32_t hold_down_us = 5000;        // quiet time before any increase (recovery, readmission)
  uint32_t max_hold_down_us = 320000;  // cap of the per-path hold-down backoff
  double recovery_step = 0.125;        // additive recovery per recovery period
  uint32_t recovery_period_us = 1000;
  // Path-id reflection: write the remote's congested path id into the CNPs our host sends
  // (data plane, docs/design/engine.md). Off = a peer that does not cooperate.
  bool reflect = true;
  // Path id without an SRH (uSID, H.Encaps.Red with one SID): our encapsulations carry it in
  // the low 16 bits of the outer source address, and those of decapsulated packets without an
  // SRH are read as the remote's path id (docs/design/engine.md). Every gateway of the fabric must
  // agree; off (the default) leaves the source untouched and reads nothing from it.
  bool path_id_in_source = false;
  // Fabric receive spreading: this many (0..16) low bits of each flow's flow label also go
  // into the outer source, in bits 16.. right above the path-id field, so that a far NIC
  // hashing only addresses spreads our flows over its queues (docs/design/engine.md). 0 (the
  // default) leaves the source alone. The decapsulating side needs nothing: it matches the
  // destination only. Lives here, beside path-id-in-source, for the same reason (applied to the
  // workers like it, without the policy runtime).
  uint8_t source_entropy_bits = 0;
  friend bool operator==(const Params&, const Params&) = default;
};

struct ParamsError {
  std::string field;  // YANG leaf name under /srv6gw:gateway/engine
  std::string message;
};

// Names the first bad field by its YANG leaf name and says why; nullopt when sound.
inline std::optional<ParamsError> check(const Params& p) {
  auto in_open_unit = [](double v) { return v > 0.0 && v < 1.0; };
  if (p.interval_us == 0 || p.interval_us > 1000000)
    return ParamsError{"interval-us", "must be 1..1000000"};
  if (!(p.alpha > 0.0 && p.alpha <= 1.0)) return ParamsError{"alpha", "must be in (0, 1]"};
  if (!in_open_unit(p.decrease)) return ParamsError{"decrease", "must be in (0, 1)"};
  if (!(p.min_factor > 0.0 && p.min_factor <= 1.0))
    return ParamsError{"min-factor", "must be in (0, 1]"};
  if (!(p.exclude_threshold > 0.0))
    return ParamsError{"exclude-threshold", "must be greater than 0"};
  if (!(p.readmit_threshold >= 0.0 && p.readmit_threshold < p.exclude_threshold))
    return ParamsError{"readmit-threshold",
                       "must be at least 0 and below exclude-threshold (hysteresis)"};
  if (!(p.readmit_factor >= p.min_factor && p.readmit_factor <= 1.0))
    return ParamsError{"readmit-factor", "must be in [min-factor, 1]"};
  if (!(p.recovery_step > 0.0 && p.recovery_step <= 1.0))
    return ParamsError{"recovery-step", "must be in (0, 1]"};
  if (p.recovery_period_us == 0) return ParamsError{"recovery-period-us", "must be at least 1"};
  if (p.max_hold_down_us < p.hold_down_us)
    return ParamsError{"max-hold-down-us", "must be at least hold-down-us"};
  if (p.source_entropy_bits > 16) return ParamsError{"source-entropy-bits", "must be 0..16"};
  return std::nullopt;
}

}  // namespace srv6gw::engine
