// SPDX-License-Identifier: BSD-3-Clause
#include "engine.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <stdexcept>
#include <string>
#include <utility>

namespace srv6gw::fabricsim {

uint32_t Workload::add(std::span<const LinkUse> links, double flow_bytes, double latency, double n,
                       std::vector<uint32_t> deps) {
  const uint32_t id = flows.add(links, n);
  bytes.push_back(flow_bytes);
  latency_s.push_back(latency);
  after.push_back(std::move(deps));
  return id;
}

SimResult simulate(const Network& net, const Workload& w) {
  const uint32_t n = w.flows.size();
  if (w.bytes.size() != n || w.latency_s.size() != n || w.after.size() != n)
    throw std::invalid_argument("workload arrays differ in length");
  MaxMinSolver solver(net.capacity_bps, w.flows);
  SimResult res;
  res.flows.resize(n);

  std::vector<std::vector<uint32_t>> dependents(n);
  std::vector<uint32_t> waiting(n, 0);
  for (uint32_t f = 0; f < n; ++f) {
    waiting[f] = uint32_t(w.after[f].size());
    for (uint32_t d : w.after[f]) {
      if (d >= n)
        throw std::invalid_argument("flow " + std::to_string(f) + " waits for " +
                                    std::to_string(d));
      dependents[d].push_back(f);
    }
  }
  using Arrival = std::pair<double, uint32_t>;
  std::priority_queue<Arrival, std::vector<Arrival>, std::greater<>> arrivals;
  std::vector<double> ready_at(n, 0.0);
  for (uint32_t f = 0; f < n; ++f)
    if (waiting[f] == 0) arrivals.push({0.0, f});

  std::vector<uint8_t> active(n, 0);
  std::vector<uint32_t> running;
  // In bits: capacities and rates are bits per second.
  std::vector<double> remaining(n);
  for (uint32_t f = 0; f < n; ++f) remaining[f] = w.bytes[f] * 8.0;
  std::vector<double> rate;
  uint32_t done = 0;
  double t = 0.0;
  while (done < n) {
    while (!arrivals.empty() && arrivals.top().first <= t) {
      const uint32_t f = arrivals.top().second;
      arrivals.pop();
      res.flows[f].start = t;
      if (remaining[f] <= 0) {  // empty flow: delivered after its latency alone
        res.flows[f].finish = t;
        res.flows[f].delivered = t + w.latency_s[f];
        ++done;
        for (uint32_t g : dependents[f]) {
          ready_at[g] = std::max(ready_at[g], res.flows[f].delivered);
          if (--waiting[g] == 0) arrivals.push({ready_at[g], g});
        }
        continue;
      }
      active[f] = 1;
      running.push_back(f);
    }
    if (running.empty()) {
      if (arrivals.empty()) throw std::runtime_error("flows wait for each other (cycle)");
      t = arrivals.top().first;
      continue;
    }
    solver.solve(active, rate, std::numeric_limits<double>::infinity());
    ++res.events;
    res.solver_steps += solver.saturated().size();
    double dt = std::numeric_limits<double>::infinity();
    for (uint32_t f : running) {
      if (std::isinf(rate[f]))
        throw std::runtime_error("flow " + std::to_string(f) + " crosses no finite-capacity link");
      if (rate[f] > 0) dt = std::min(dt, remaining[f] / rate[f]);
    }
    if (!arrivals.empty()) dt = std::min(dt, arrivals.top().first - t);
    if (std::isinf(dt)) {
      // Only flows across a dead link (capacity 0) are left: they never complete.
      res.stuck = uint32_t(running.size());
      res.completion_s = std::numeric_limits<double>::infinity();
      return res;
    }
    t += dt;
    // Flows within a relative 1e-9 of finishing now finish together: equal flows at equal
    // rates cost one event, not one each.
    std::vector<uint32_t> still;
    still.reserve(running.size());
    for (uint32_t f : running) {
      remaining[f] -= rate[f] * dt;
      if (remaining[f] <= 8e-9 * w.bytes[f]) {
        remaining[f] = 0;
        active[f] = 0;
        res.flows[f].finish = t;
        res.flows[f].delivered = t + w.latency_s[f];
        res.completion_s = std::max(res.completion_s, res.flows[f].delivered);
        ++done;
        for (uint32_t g : dependents[f]) {
          ready_at[g] = std::max(ready_at[g], res.flows[f].delivered);
          if (--waiting[g] == 0) arrivals.push({ready_at[g], g});
        }
      } else {
        still.push_back(f);
      }
    }
    running.swap(still);
  }
  for (const FlowTimes& ft : res.flows) res.completion_s = std::max(res.completion_s, ft.delivered);
  return res;
}

}  // namespace srv6gw::fabricsim
