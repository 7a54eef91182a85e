// SPDX-License-Identifier: BSD-3-Clause
// Max-min fair sharing of link capacities between flows (progressive filling). A flow may
// spread its rate over several links in fixed proportions (a sprayed flow puts 1/k of its
// rate on each of its k paths' links): its rate is then limited by the link where its share
// saturates first, which is how one sender rate split by round robin behaves.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace srv6gw::fabricsim {

// The fraction of a flow's rate that crosses one link (1.0 for a single-path flow).
struct LinkUse {
  uint32_t link = 0;
  double share = 1.0;
};

// Flows in a compressed row layout: flow f uses uses[offset[f] .. offset[f+1]). `count` is
// the number of identical flows one entry stands for (same links, same shares): they get the
// same max-min rate, so aggregating them is exact and saves work.
struct FlowSet {
  std::vector<uint32_t> offset{0};
  std::vector<LinkUse> uses;
  std::vector<double> count;

  uint32_t size() const { return uint32_t(count.size()); }
  uint32_t add(std::span<const LinkUse> links, double n = 1.0);
  std::span<const LinkUse> links_of(uint32_t f) const {
    return {uses.data() + offset[f], uses.data() + offset[f + 1]};
  }
};

// Progressive filling over a fixed link set and flow set; only `active` flows take part.
// The link-to-flow index is built once per flow set and reused by every solve, so one solve
// costs O(links x saturation steps + uses of the active flows).
class MaxMinSolver {
 public:
  MaxMinSolver(std::vector<double> capacity, const FlowSet& flows);

  // Rates (per flow of an entry, not times its count) for the active flows; 0 for the others.
  // A flow with no link (or only links of infinite capacity) would be unbounded: it gets
  // `unbounded_rate`.
  void solve(std::span<const uint8_t> active, std::vector<double>& rate,
             double unbounded_rate = 0.0);

  // Links that saturated in the last solve, in order (diagnostics, tests).
  const std::vector<uint32_t>& saturated() const { return saturated_; }
  uint32_t links() const { return uint32_t(capacity_.size()); }
  double capacity(uint32_t link) const { return capacity_[link]; }

 private:
  std::vector<double> capacity_;
  const FlowSet& flows_;
  std::vector<uint32_t> link_offset_;  // link -> flows crossing it (CSR)
  std::vector<uint32_t> link_flows_;
  // scratch, reused across solves
  std::vector<double> residual_;    // capacity minus the use of frozen flows
  std::vector<double> weight_;      // sum of count x share of the unfrozen flows
  std::vector<uint32_t> unfrozen_;  // unfrozen flows per link
  std::vector<uint8_t> frozen_;
  std::vector<uint32_t> saturated_;
};

// One-shot convenience: all flows active.
std::vector<double> max_min_rates(const std::vector<double>& capacity, const FlowSet& flows);

}  // namespace srv6gw::fabricsim
