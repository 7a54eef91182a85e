// SPDX-License-Identifier: BSD-3-Clause
#include "maxmin.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace srv6gw::fabricsim {

uint32_t FlowSet::add(std::span<const LinkUse> links, double n) {
  uses.insert(uses.end(), links.begin(), links.end());
  offset.push_back(uint32_t(uses.size()));
  count.push_back(n);
  return uint32_t(count.size() - 1);
}

MaxMinSolver::MaxMinSolver(std::vector<double> capacity, const FlowSet& flows)
    : capacity_(std::move(capacity)), flows_(flows) {
  const uint32_t n_links = links();
  link_offset_.assign(n_links + 1, 0);
  for (const LinkUse& u : flows_.uses) {
    if (u.link >= n_links)
      throw std::invalid_argument("flow uses link " + std::to_string(u.link) + " of " +
                                  std::to_string(n_links));
    ++link_offset_[u.link + 1];
  }
  for (uint32_t l = 0; l < n_links; ++l) link_offset_[l + 1] += link_offset_[l];
  link_flows_.resize(flows_.uses.size());
  std::vector<uint32_t> fill(link_offset_.begin(), link_offset_.end() - 1);
  for (uint32_t f = 0; f < flows_.size(); ++f)
    for (const LinkUse& u : flows_.links_of(f)) link_flows_[fill[u.link]++] = f;
  residual_.resize(n_links);
  weight_.resize(n_links);
  unfrozen_.resize(n_links);
}

void MaxMinSolver::solve(std::span<const uint8_t> active, std::vector<double>& rate,
                         double unbounded_rate) {
  const uint32_t n_links = links();
  const uint32_t n_flows = flows_.size();
  rate.assign(n_flows, 0.0);
  frozen_.assign(n_flows, 1);
  saturated_.clear();
  std::copy(capacity_.begin(), capacity_.end(), residual_.begin());
  std::fill(weight_.begin(), weight_.end(), 0.0);
  std::fill(unfrozen_.begin(), unfrozen_.end(), 0u);
  uint32_t left = 0;
  for (uint32_t f = 0; f < n_flows; ++f) {
    if (!active[f]) continue;
    frozen_[f] = 0;
    ++left;
    for (const LinkUse& u : flows_.links_of(f)) {
      weight_[u.link] += flows_.count[f] * u.share;
      ++unfrozen_[u.link];
    }
  }
  // All unfrozen flows share one rate, `level`, which only grows. A link with residual R and
  // unfrozen weight W saturates when level reaches R / W; the link that saturates first
  // freezes every unfrozen flow crossing it at that level.
  double level = 0.0;
  while (left > 0) {
    uint32_t best = n_links;
    double best_level = std::numeric_limits<double>::infinity();
    for (uint32_t l = 0; l < n_links; ++l) {
      if (unfrozen_[l] == 0 || !(weight_[l] > 0) || std::isinf(capacity_[l])) continue;
      const double at = std::max(level, residual_[l] / weight_[l]);
      if (at < best_level) {
        best_level = at;
        best = l;
      }
    }
    if (best == n_links) break;  // the rest cross no finite link
    level = best_level;
    saturated_.push_back(best);
    for (uint32_t k = link_offset_[best]; k < link_offset_[best + 1]; ++k) {
      const uint32_t f = link_flows_[k];
      if (frozen_[f]) continue;
      frozen_[f] = 1;
      --left;
      rate[f] = level;
      for (const LinkUse& u : flows_.links_of(f)) {
        const double w = flows_.count[f] * u.share;
        residual_[u.link] -= w * level;
        if (--unfrozen_[u.link] == 0)
          weight_[u.link] = 0.0;  // no rounding residue left behind
        else
          weight_[u.link] -= w;
      }
    }
  }
  if (left > 0)
    for (uint32_t f = 0; f < n_flows; ++f)
      if (!frozen_[f]) rate[f] = unbounded_rate;
}

std::vector<double> max_min_rates(const std::vector<double>& capacity, const FlowSet& flows) {
  MaxMinSolver solver(capacity, flows);
  std::vector<uint8_t> active(flows.size(), 1);
  std::vector<double> rate;
  solver.solve(active, rate);
  return rate;
}

}  // namespace srv6gw::fabricsim
