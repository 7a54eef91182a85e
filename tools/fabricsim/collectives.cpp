// SPDX-License-Identifier: BSD-3-Clause
#include "collectives.hpp"

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>

namespace srv6gw::fabricsim {

std::vector<Demand> alltoall(uint32_t hosts, double message_bytes, uint32_t qps) {
  if (hosts < 2 || qps == 0) throw std::invalid_argument("alltoall needs >= 2 hosts and >= 1 QP");
  std::vector<Demand> out;
  out.reserve(size_t(hosts) * (hosts - 1) * qps);
  const double per_qp = message_bytes / hosts / qps;
  // Each source walks its peers starting after itself (src+1, src+2, ...), as NCCL's
  // AlltoAll does: arrival order matters to the placement schemes that decide per arrival.
  for (uint32_t s = 0; s < hosts; ++s)
    for (uint32_t k = 1; k < hosts; ++k)
      for (uint32_t q = 0; q < qps; ++q) out.push_back({s, (s + k) % hosts, 0x100 + q, per_qp, {}});
  return out;
}

std::vector<uint32_t> moe_hot_experts(uint32_t hosts, const MoeParams& p) {
  std::vector<uint32_t> order(hosts);
  std::iota(order.begin(), order.end(), 0u);
  std::mt19937_64 rng(p.seed);
  std::shuffle(order.begin(), order.end(), rng);
  const uint32_t hot = std::clamp<uint32_t>(uint32_t(p.hot_fraction * hosts + 0.5), 1u, hosts - 1);
  order.resize(hot);
  std::sort(order.begin(), order.end());
  return order;
}

std::vector<Demand> moe_alltoall(uint32_t hosts, double message_bytes, const MoeParams& p,
                                 uint32_t qps) {
  if (hosts < 3 || qps == 0) throw std::invalid_argument("moe alltoall needs >= 3 hosts");
  if (!(p.hot_share > 0 && p.hot_share < 1)) throw std::invalid_argument("hot share in (0,1)");
  const std::vector<uint32_t> hot_list = moe_hot_experts(hosts, p);
  std::vector<uint8_t> hot(hosts, 0);
  for (uint32_t h : hot_list) hot[h] = 1;
  std::vector<Demand> out;
  for (uint32_t s = 0; s < hosts; ++s) {
    // Peers of s: the hot ones share hot_share of its bytes, the cold ones the rest.
    uint32_t n_hot = 0, n_cold = 0;
    for (uint32_t d = 0; d < hosts; ++d)
      if (d != s) (hot[d] ? n_hot : n_cold)++;
    const double share_hot = n_cold == 0 ? 1.0 : (n_hot == 0 ? 0.0 : p.hot_share);
    for (uint32_t k = 1; k < hosts; ++k) {
      const uint32_t d = (s + k) % hosts;
      const double bytes =
          hot[d] ? message_bytes * share_hot / n_hot : message_bytes * (1 - share_hot) / n_cold;
      for (uint32_t q = 0; q < qps; ++q) out.push_back({s, d, 0x100 + q, bytes / qps, {}});
    }
  }
  return out;
}

std::vector<Demand> ring_allreduce(uint32_t hosts, double message_bytes) {
  if (hosts < 2) throw std::invalid_argument("ring needs >= 2 hosts");
  const uint32_t steps = 2 * (hosts - 1);
  const double chunk = message_bytes / hosts;
  std::vector<Demand> out;
  out.reserve(size_t(steps) * hosts);
  auto id = [hosts](uint32_t step, uint32_t host) { return step * hosts + host; };
  for (uint32_t st = 0; st < steps; ++st)
    for (uint32_t h = 0; h < hosts; ++h) {
      Demand d{h, (h + 1) % hosts, 0x100, chunk, {}};
      if (st > 0) {
        d.after.push_back(id(st - 1, (h + hosts - 1) % hosts));  // chunk received
        d.after.push_back(id(st - 1, h));                        // own previous send
      }
      out.push_back(std::move(d));
    }
  return out;
}

double nic_bound_s(const std::vector<Demand>& demands, uint32_t hosts, double nic_bps) {
  std::vector<double> out(hosts, 0.0), in(hosts, 0.0);
  for (const Demand& d : demands) {
    out[d.src] += d.bytes;
    in[d.dst] += d.bytes;
  }
  double worst = 0;
  for (uint32_t h = 0; h < hosts; ++h) worst = std::max({worst, out[h], in[h]});
  return worst * 8.0 / nic_bps;
}

}  // namespace srv6gw::fabricsim
