// SPDX-License-Identifier: BSD-3-Clause
// The worker loop, in DPDK l3fwd's shape: per iteration, poll each RX queue (poll(): RX
// burst, pipeline, queue for TX, send a full burst) unless its direction's backlog is full
// (lossless, tx_queue.hpp), hand over waiting probes, drain partly filled TX queues when idle
// or on the drain timer, report quiescent state.
#include "worker.hpp"

#include <rte_branch_prediction.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>

#include "dataplane/control/gateway.hpp"
#include "dataplane/datapath/burst.hpp"
#include "dataplane/datapath/probe.hpp"
#include "tx_queue.hpp"

namespace srv6gw::app {

std::atomic<bool> g_stop{false};

namespace {

using dataplane::kBurstSize;
using dataplane::WorkerCounters;
static_assert(dataplane::kRxBurstHistogramBuckets == kBurstSize + 1,
              "one histogram bucket per possible RX burst size, 0 included");

using BurstFn = uint16_t (*)(dataplane::WorkerContext&, rte_mbuf**, uint16_t, rte_mbuf**);

// One RX poll (l3fwd's per-queue step): receive a burst on `port`, run the pipeline side
// `Process` on it (a template argument: a direct, inlinable call), queue what it returns on
// `tx` and send once a full burst waits there. Returns how many packets came in.
//
// busy_tsc: the pipeline adds the cycles spent inside process_*_burst; we add what the
// worker spends around it on bursts that carried packets (RX burst, TX), so that
// busy_tsc / packets is the whole per-packet cost, as testpmd's cycles/packet. `t0` is when
// the previous busy stretch ended: the RX poll is counted from there when it brings
// packets, and t0 moves to the end of this one. pipeline_tsc is left to the pipeline.
template <BurstFn Process>
[[gnu::always_inline]] inline uint16_t poll(uint16_t port, uint16_t queue,
                                            dataplane::WorkerContext& ctx, WorkerCounters& c,
                                            TxQueue& tx, uint64_t& t0) {
  rte_mbuf* rx[kBurstSize];
  const uint16_t n = rte_eth_rx_burst(port, queue, rx, kBurstSize);
  ++c.rx_burst_histogram[n];
  if (n == 0) return 0;
  c.busy_tsc += rte_rdtsc() - t0;
  tx.commit(Process(ctx, rx, n, tx.reserve()), c);
  t0 = rte_rdtsc();
  if (tx.burst_ready()) {
    tx.flush(c, t0);
    const uint64_t t1 = rte_rdtsc();
    c.busy_tsc += t1 - t0;
    t0 = t1;
  }
  return n;
}

// Lossless: while `tx` holds its bound the ingress feeding it is not polled (its RX ring
// fills, the NIC pauses the sender). Counts the time paused and each pause.
[[gnu::always_inline]] inline bool ingress_paused(const TxQueue& tx, bool& was_paused,
                                                  uint64_t& paused_tsc, uint64_t& pauses,
                                                  uint64_t elapsed) {
  const bool paused = tx.full();
  if (unlikely(paused)) {
    paused_tsc += elapsed;
    pauses += !was_paused;
  }
  was_paused = paused;
  return paused;
}

}  // namespace

int worker_main(void* arg) {
  const WorkerArgs& a = *static_cast<const WorkerArgs*>(arg);
  dataplane::WorkerContext& ctx = *a.context;
  WorkerCounters& c = dataplane::counters(ctx);
  rte_rcu_qsbr* qsbr = a.gateway->qsbr();
  const unsigned reader = dataplane::worker_index(ctx);
  const uint16_t q = a.queue;

  TxQueue to_fabric(a.fabric_port, q, a.to_fabric,
                    {&c.tx_fabric, &c.tx_fabric_bytes, &c.backlog_to_fabric, &c.storms_to_fabric,
                     &c.storm_ends_to_fabric});
  TxQueue to_host(
      a.host_port, q, a.to_host,
      {&c.tx_host, &c.tx_host_bytes, &c.backlog_to_host, &c.storms_to_host, &c.storm_ends_to_host});
  bool host_paused = false, fabric_paused = false;

  // Gateway::create registered reader ids 0..n-1; we only go online/offline (datapath/burst.hpp).
  rte_rcu_qsbr_thread_online(qsbr, reader);

  uint64_t last_drain = rte_rdtsc();
  uint64_t prev_t0 = last_drain;
  while (likely(!g_stop.load(std::memory_order_relaxed))) {
    uint64_t t0 = rte_rdtsc();
    const uint64_t elapsed = t0 - prev_t0;
    prev_t0 = t0;
    uint16_t n_host = 0, n_fabric = 0;
    if (!ingress_paused(to_fabric, host_paused, c.paused_host_tsc, c.ingress_pauses, elapsed))
      n_host = poll<dataplane::process_host_burst>(a.host_port, q, ctx, c, to_fabric, t0);
    if (!ingress_paused(to_host, fabric_paused, c.paused_fabric_tsc, c.ingress_pauses, elapsed))
      n_fabric = poll<dataplane::process_fabric_burst>(a.fabric_port, q, ctx, c, to_host, t0);

    // Path health probes waiting for the fabric port (a rail's first worker only; one ring check).
    // They wait in their ring while the fabric backlog is full.
    if (!to_fabric.full()) {
      if (const uint16_t n_probe = dataplane::take_probe_tx(ctx, to_fabric.reserve(), kBurstSize);
          unlikely(n_probe != 0)) {
        to_fabric.commit(n_probe, c);
        if (to_fabric.burst_ready()) to_fabric.flush(c, t0);
      }
    }
    // Partly filled queues go out when both RX queues came back empty (nothing more to
    // coalesce: lowest latency at low load) or when the drain period has passed. A held
    // backlog (lossless) is offered again on every iteration.
    if ((n_host | n_fabric) == 0 || t0 - last_drain >= a.drain_tsc) {
      if (to_fabric.pending() | to_host.pending()) {
        const uint64_t t1 = rte_rdtsc();
        to_fabric.flush(c, t1);
        to_host.flush(c, t1);
        c.busy_tsc += rte_rdtsc() - t1;
      }
      last_drain = t0;
    } else {
      if (unlikely(to_fabric.burst_ready())) to_fabric.flush(c, t0);
      if (unlikely(to_host.burst_ready())) to_host.flush(c, t0);
    }
    rte_rcu_qsbr_quiescent(qsbr, reader);
  }

  // Stopping: one last offer, then whatever the queues still refuse is freed (held_at_stop).
  const uint64_t t_end = rte_rdtsc();
  to_fabric.flush(c, t_end);
  to_host.flush(c, t_end);
  to_fabric.discard(c);
  to_host.discard(c);
  rte_rcu_qsbr_thread_offline(qsbr, reader);
  return 0;
}

}  // namespace srv6gw::app
