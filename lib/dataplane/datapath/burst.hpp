// SPDX-License-Identifier: BSD-3-Clause
// Worker side of the data plane (grout's datapath/): what a worker lcore calls per burst.
// The Gateway (dataplane/control/gateway.hpp) creates the WorkerContexts and the state they
// read; a worker only calls the functions below with its own context.
//
// RCU QSBR protocol:
//   Gateway::create() registers reader ids 0..n_workers-1 on Gateway::qsbr() (registering
//   again is harmless). The worker with context Gateway::worker(i), i = worker_index(ctx):
//     worker_online(ctx)      once before its first burst,
//     process_host_burst() / process_fabric_burst() on each burst received,
//     worker_quiescent(ctx)   once per loop iteration,
//     worker_offline(ctx)     when it stops.
//   A worker must not keep any pointer obtained inside a process_* call across a quiescent
//   report. An offline or never-started worker does not hold back reclamation.
#pragma once

#include <cstdint>

#include "dataplane/counters.hpp"

struct rte_mbuf;

namespace srv6gw::dataplane {

inline constexpr uint16_t kBurstSize = 32;

// Per-lcore worker state (dataplane/worker_context.hpp), used by exactly one worker lcore.
struct WorkerContext;

// `pkts` is the burst received on one port. Packets to transmit on the other port are
// written to `out` (capacity n) in order and their count returned; every other packet has
// been freed and counted. No allocation (except chained header mbufs from the pool), no lock.
// Host side: parse, steer, then the encap step per packet (datapath/burst.cpp).
uint16_t process_host_burst(WorkerContext& w, rte_mbuf** pkts, uint16_t n, rte_mbuf** out);
// Fabric side: L2 walk and local SID lookup, then the decap step per packet.
uint16_t process_fabric_burst(WorkerContext& w, rte_mbuf** pkts, uint16_t n, rte_mbuf** out);

// Counters of the worker (its own lines; the worker writes, the control thread reads).
WorkerCounters& counters(WorkerContext& w);
// Worker index as registered with the QSBR variable.
unsigned worker_index(const WorkerContext& w);

// QSBR reporting for worker(i) (see the protocol at the top of this file).
void worker_online(WorkerContext& w);
void worker_quiescent(WorkerContext& w);
void worker_offline(WorkerContext& w);

}  // namespace srv6gw::dataplane
