// SPDX-License-Identifier: BSD-3-Clause
// Parameters of path health probing (docs/design/probing.md) and their checks. Header-only and
// dependency-free: the configuration model embeds ProbeParams (YANG container
// /srv6gw:gateway/probe) and config::validate() reuses check().
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace srv6gw::engine {

// Probes a path may have in flight (sent, neither answered nor lost yet).
inline constexpr uint32_t kProbeOutstanding = 1024;

struct ProbeParams {
  bool enabled = true;              // send probes for policies that name a remote probe SID
  uint32_t interval_us = 1000;      // one probe per probed segment list per interval
  uint32_t timeout_us = 5000;       // a probe not answered within this is lost
  uint32_t loss_threshold = 3;      // consecutive lost probes that take a path down
  uint32_t hold_down_us = 1000000;  // answered probes for this long bring a down path back
  friend bool operator==(const ProbeParams&, const ProbeParams&) = default;
};

struct ProbeParamsError {
  std::string field;  // YANG leaf name under /srv6gw:gateway/probe
  std::string message;
};

// Names the first bad field by its YANG leaf name and says why; nullopt when sound.
inline std::optional<ProbeParamsError> check(const ProbeParams& p) {
  if (p.interval_us < 100 || p.interval_us > 10000000)
    return ProbeParamsError{"interval-us", "must be 100..10000000"};
  if (p.timeout_us < 100 || p.timeout_us > 10000000)
    return ProbeParamsError{"timeout-us", "must be 100..10000000"};
  if (uint64_t(p.timeout_us) > uint64_t(kProbeOutstanding) * p.interval_us)
    return ProbeParamsError{"timeout-us", "must be at most " + std::to_string(kProbeOutstanding) +
                                              " x interval-us (probes in flight per path)"};
  if (p.loss_threshold < 1 || p.loss_threshold > 1000)
    return ProbeParamsError{"loss-threshold", "must be 1..1000"};
  if (p.hold_down_us > 600000000) return ProbeParamsError{"hold-down-us", "must be 0..600000000"};
  return std::nullopt;
}

}  // namespace srv6gw::engine
