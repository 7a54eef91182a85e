// SPDX-License-Identifier: BSD-3-Clause
// Event-driven flow-level simulation: the max-min rates of the active flows are recomputed at
// every flow arrival and completion and are constant in between. A flow is delivered a fixed
// latency (propagation + serialisation along its path) after its last byte left the fluid
// model; flows that wait for others (a ring step waits for the previous step's chunk) start
// when all of those are delivered.
#pragma once

#include <cstdint>
#include <vector>

#include "maxmin.hpp"

namespace srv6gw::fabricsim {

struct Network {
  std::vector<double> capacity_bps;  // per link, bits per second
};

struct Workload {
  FlowSet flows;                             // link uses (count = identical flows aggregated)
  std::vector<double> bytes;                 // per flow of an entry
  std::vector<double> latency_s;             // fixed term added at delivery
  std::vector<std::vector<uint32_t>> after;  // flows whose delivery this flow waits for

  uint32_t add(std::span<const LinkUse> links, double flow_bytes, double latency, double n = 1.0,
               std::vector<uint32_t> deps = {});
};

struct FlowTimes {
  double start = 0;
  double finish = 0;     // last byte through the fluid model
  double delivered = 0;  // finish + latency
};

struct SimResult {
  std::vector<FlowTimes> flows;
  double completion_s = 0;  // collective completion time: last delivery (inf if stuck)
  uint32_t stuck = 0;       // flows that can never finish (all their links dead)
  uint64_t events = 0;      // rate recomputations
  uint64_t solver_steps = 0;
};

SimResult simulate(const Network& net, const Workload& w);

}  // namespace srv6gw::fabricsim
