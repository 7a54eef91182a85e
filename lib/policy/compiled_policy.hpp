// SPDX-License-Identifier: BSD-3-Clause
// An SR policy compiled for the data plane: one pre-built encapsulation template per segment
// list and the path-selection structures precomputed from the weights in force. Immutable
// once built: the control thread builds a new object for every change (configuration or local
// engine factors) and publishes it with one pointer store; workers only read it.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "config/model.hpp"
#include "srv6/encap.hpp"

namespace srv6gw::policy {

// Segment lists per policy (the configuration's limit; per-worker selection state and path
// counters are sized by it).
inline constexpr unsigned kMaxPaths = config::kMaxSegmentListsPerPolicy;
// Weighted bucket table of the per-flow modes: a flow hash picks one of these.
inline constexpr unsigned kBucketBits = 10;
inline constexpr unsigned kBuckets = 1u << kBucketBits;
// Local engine factors are fixed point with 16 fraction bits: 1.0 = 65536.
inline constexpr unsigned kFactorShift = 16;
inline constexpr uint32_t kFactorOne = 1u << kFactorShift;
inline constexpr double kMaxFactor = 64.0;
// Returned by selection when no segment list is usable.
inline constexpr uint8_t kNoPath = 0xFF;
// balanced mode: load groups (shared first hops) known to the process; per-worker load
// counters are sized by it.
inline constexpr unsigned kMaxLoadGroups = 1024;

// What balanced mode compares when it places a flow. `flows` is what the gateway uses:
// active flows relative to the weight in force, ties broken by recent bytes (see
// docs/design/daemon.md, "balanced"); `bytes` (recent bytes first) is kept for the comparison
// measured in tests/unit/policy/test_balanced.cpp and is not configurable.
enum class BalanceBy : uint8_t { flows, bytes };

static_assert(kMaxPaths <= 64, "active-set bit mask is 64 bits");

struct CompiledPath {
  srv6::EncapTemplate encap;  // built once; copied in front of every packet of this path
  uint16_t path_id = 0;       // SRH Tag
  bool backup = false;
  uint32_t weight = 0;               // configured
  uint32_t factor_q16 = kFactorOne;  // local SR engine factor in force
  uint64_t effective_weight = 0;     // weight x factor (q16), 0 = unusable
  std::string name;                  // segment-list name (stats, factor carry-over)
  std::string load_group;            // balanced mode: group key (load-group or first SID)
  double factor() const { return double(factor_q16) / kFactorOne; }
};

// Everything a worker reads per packet sits in the first cache lines; names and the path
// array (templates) follow.
class CompiledPolicy {
 public:
  // ---- hot: read by workers ----
  uint64_t version = 0;  // unique per object: per-worker SWRR state resets when it changes
  uint32_t lineage = 0;  // same across factor-only rebuilds: flowlet entries stay valid
  config::SelectionMode mode = config::SelectionMode::flow;
  // The templates carry the gateway's source-address (the policy sets none): a worker of a
  // rail with its own source writes that one instead (docs/design/rails.md).
  bool default_source = true;
  // bit i set = the policy applies on rail i (config::policy_rail_mask; every bit when it
  // has no `rails`). A worker of another rail treats a match as a steering miss.
  uint64_t rail_mask = config::kAllRails;
  uint8_t path_count = 0;
  uint8_t active_count = 0;  // segment lists in the active set (0 = no usable path)
  uint64_t active_mask = 0;  // bit i set = path i is in the active set
  // bit i set = path i is out because it is down (probes lost, or a controller's path-down),
  // not merely de-weighted or excluded for congestion: balanced mode moves its flows on
  // their next packet instead of at their next idle gap. Never overlaps active_mask.
  uint64_t down_mask = 0;
  uint64_t flowlet_gap_tsc = 0;             // flowlet: idle time after which a flow may move
  uint64_t idle_gap_tsc = 0;                // balanced: idle time after which a flow is re-placed
  BalanceBy balance_by = BalanceBy::flows;  // balanced: the load compared
  std::array<uint64_t, 4> spray_opcodes{};  // selective: 256-bit BTH opcode bitmap
  int32_t swrr_total = 0;                   // sum of swrr_weight
  std::array<uint8_t, kMaxPaths> active{};  // path index of active-set member i
  std::array<int32_t, kMaxPaths> swrr_weight{};  // normalised effective weight of member i
  std::array<uint16_t, kMaxPaths> load_group{};  // balanced: path index -> load group index
  std::array<uint8_t, kBuckets> buckets{};       // flow hash -> path index
  std::vector<CompiledPath> paths;               // index = path index (config order)

  // ---- cold ----
  std::string name;

  bool sprays(uint8_t opcode) const { return (spray_opcodes[opcode >> 6] >> (opcode & 63)) & 1; }
  bool usable(uint8_t path) const { return path < 64 && ((active_mask >> path) & 1); }
  // Flows carry path indices < kMaxPaths <= 64 (static_assert above).
  bool is_down(uint8_t path) const { return (down_mask >> (path & 63)) & 1; }
};

// Inputs of compilation that come from the gateway rather than from the policy itself; a
// policy must be recompiled when any of them changes.
struct CompileEnv {
  net::Ipv6Addr default_source;
  uint8_t hop_limit = 64;
  uint64_t tsc_hz = 0;  // flowlet gap conversion; 0 = 1 tick per microsecond (tests)
  friend bool operator==(const CompileEnv&, const CompileEnv&) = default;
};

// Compiles `p` (at its YANG path for errors). `factors_q16` gives the engine factor per
// segment list (empty = all 1.0). Returns null and fills `error` on refusal.
// `rail_mask`: config::policy_rail_mask of `p` in its configuration (the rails it applies on).
std::unique_ptr<const CompiledPolicy> compile_policy(const config::Policy& p, const CompileEnv& env,
                                                     std::span<const uint32_t> factors_q16,
                                                     config::ConfigError& error,
                                                     uint64_t rail_mask = config::kAllRails);

// A copy of `p` with new local-engine factors (one per segment list, >= 0, <= kMaxFactor,
// 0 takes a list out). Selection structures are recomputed; templates are copied. Keeps the
// lineage (flowlet state stays valid) but gets a new version. Null + error on bad factors.
// `down_mask` (bit i = list i in configuration order) names the lists that are out because
// they are down rather than de-weighted (CompiledPolicy::down_mask); bits of lists still in
// the active set are ignored (a down list kept as the policy's last one carries its flows).
std::unique_ptr<const CompiledPolicy> with_factors(const CompiledPolicy& p,
                                                   std::span<const double> factors,
                                                   config::ConfigError& error,
                                                   uint64_t down_mask = 0);

// Converts an engine factor to fixed point (clamped to [0, kMaxFactor]).
uint32_t factor_to_q16(double factor);

// The process-wide index of a load-group key (balanced mode): the same key always gets the
// same index, in every policy and across recompiles, so that per-worker load counters stay
// meaningful when policies change. Indices are handed out in order of first use; once
// kMaxLoadGroups keys are known, further keys share an index chosen by hash (their loads
// are then counted together: a degradation, not a failure). Thread-safe (control threads).
uint16_t load_group_index(const std::string& key);
// The key of a segment list: "group:" + its load-group, else "sid:" + its first SID.
std::string load_group_key(const config::SegmentList& sl);

}  // namespace srv6gw::policy
