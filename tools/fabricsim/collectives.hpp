// SPDX-License-Identifier: BSD-3-Clause
// Collectives as point-to-point demands between hosts (one GPU = one host = one gateway),
// independent of how they are routed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace srv6gw::fabricsim {

struct Demand {
  uint32_t src = 0;  // host index
  uint32_t dst = 0;
  uint32_t qp = 0;  // DestQP number (per-flow hashing and placement key)
  double bytes = 0;
  std::vector<uint32_t> after;  // demands whose delivery this one waits for
  double max_rate_bps = 0;      // open-loop sender: never faster than this (0 = no limit)
};

// AlltoAll: every host's buffer of `message_bytes` is cut in one chunk per host; each host
// sends its chunk to every other host (message_bytes / hosts per pair), spread over `qps` QPs
// per pair.
std::vector<Demand> alltoall(uint32_t hosts, double message_bytes, uint32_t qps = 1);

// MoE-like AlltoAll: each host (one expert each) sends `message_bytes` in total, but a
// `hot_fraction` of the experts (chosen with `seed`) receive `hot_share` of every source's
// tokens, the others share the rest evenly.
struct MoeParams {
  double hot_fraction = 0.125;
  double hot_share = 0.5;
  uint64_t seed = 1;
};
std::vector<Demand> moe_alltoall(uint32_t hosts, double message_bytes, const MoeParams& p,
                                 uint32_t qps = 1);
// The experts moe_alltoall makes hot (for reports).
std::vector<uint32_t> moe_hot_experts(uint32_t hosts, const MoeParams& p);

// Ring AllReduce over hosts 0..n-1 in index order: reduce-scatter then all-gather, 2(n-1)
// steps, each host sending one chunk of message_bytes / n to the next per step. A step waits
// for the chunk received in the previous step and for the host's own previous send.
std::vector<Demand> ring_allreduce(uint32_t hosts, double message_bytes);

// Lower bound on the completion time from the hosts' NICs alone: the most bytes any host
// sends or receives, at `nic_bps`.
double nic_bound_s(const std::vector<Demand>& demands, uint32_t hosts, double nic_bps);

}  // namespace srv6gw::fabricsim
