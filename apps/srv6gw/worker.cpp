// SPDX-License-Identifier: BSD-3-Clause
// The worker loop, in DPDK l3fwd's shape: per iteration, poll each RX queue (poll(): RX
// burst, pipeline, queue for TX, send a full burst), hand over waiting probes, drain partly
// filled TX buffers when idle or on the drain timer, report quiescent state.
#include "worker.hpp"

#include <rte_branch_prediction.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>

#include "dataplane/control/gateway.hpp"
#include "dataplane/datapath/burst.hpp"
#include "dataplane/datapath/probe.hpp"

namespace srv6gw::app {

std::atomic<bool> g_stop{false};

namespace {

using dataplane::kBurstSize;
using dataplane::WorkerCounters;
static_assert(dataplane::kRxBurstHistogramBuckets == kBurstSize + 1,
              "one histogram bucket per possible RX burst size, 0 included");

// Packets waiting for one TX queue and the worker's counters of that port. The pipeline
// writes its output straight behind the packets already waiting; we flush as soon as a full
// burst is there, so with count < kBurstSize before a burst of at most kBurstSize the array
// never overflows.
struct TxBuffer {
  uint16_t port = 0;
  uint16_t queue = 0;
  uint16_t count = 0;
  uint64_t* tx_packets = nullptr;  // WorkerCounters::tx_fabric or tx_host
  uint64_t* tx_bytes = nullptr;
  rte_mbuf* pkts[2 * kBurstSize];
};

// Hands the waiting packets to the PMD. What it refuses is freed and counted as tx_full:
// waiting for ring space would stall the other direction too.
inline void flush(TxBuffer& b, WorkerCounters& c) {
  const uint16_t n = b.count;
  if (n == 0) return;
  b.count = 0;
  uint64_t bytes = 0;
  // Read lengths before TX: after rte_eth_tx_burst the mbufs belong to the driver (net_pcap
  // frees them inside the call).
  for (uint16_t i = 0; i < n; ++i) bytes += b.pkts[i]->pkt_len;
  const uint16_t sent = rte_eth_tx_burst(b.port, b.queue, b.pkts, n);
  if (unlikely(sent < n)) {
    for (uint16_t i = sent; i < n; ++i) {
      bytes -= b.pkts[i]->pkt_len;
      rte_pktmbuf_free(b.pkts[i]);
    }
    c.drops[size_t(dataplane::DropReason::tx_full)] += n - sent;
  }
  *b.tx_packets += sent;
  *b.tx_bytes += bytes;
}

// flush() with its cycles counted as busy.
inline void flush_busy(TxBuffer& b, WorkerCounters& c) {
  const uint64_t t = rte_rdtsc();
  flush(b, c);
  c.busy_tsc += rte_rdtsc() - t;
}

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
                                            TxBuffer& tx, uint64_t& t0) {
  rte_mbuf* rx[kBurstSize];
  const uint16_t n = rte_eth_rx_burst(port, queue, rx, kBurstSize);
  ++c.rx_burst_histogram[n];
  if (n == 0) return 0;
  c.busy_tsc += rte_rdtsc() - t0;
  tx.count = uint16_t(tx.count + Process(ctx, rx, n, &tx.pkts[tx.count]));
  if (tx.count >= kBurstSize) flush_busy(tx, c);
  t0 = rte_rdtsc();
  return n;
}

}  // namespace

int worker_main(void* arg) {
  const WorkerArgs& a = *static_cast<const WorkerArgs*>(arg);
  dataplane::WorkerContext& ctx = *a.context;
  WorkerCounters& c = dataplane::counters(ctx);
  rte_rcu_qsbr* qsbr = a.gateway->qsbr();
  const unsigned reader = dataplane::worker_index(ctx);
  const uint16_t q = a.queue;

  TxBuffer to_fabric;
  to_fabric.port = a.fabric_port;
  to_fabric.queue = q;
  to_fabric.tx_packets = &c.tx_fabric;
  to_fabric.tx_bytes = &c.tx_fabric_bytes;
  TxBuffer to_host;
  to_host.port = a.host_port;
  to_host.queue = q;
  to_host.tx_packets = &c.tx_host;
  to_host.tx_bytes = &c.tx_host_bytes;

  // Gateway::create registered reader ids 0..n-1; we only go online/offline (datapath/burst.hpp).
  rte_rcu_qsbr_thread_online(qsbr, reader);

  uint64_t last_drain = rte_rdtsc();
  while (likely(!g_stop.load(std::memory_order_relaxed))) {
    uint64_t t0 = rte_rdtsc();
    const uint16_t n_host =
        poll<dataplane::process_host_burst>(a.host_port, q, ctx, c, to_fabric, t0);
    const uint16_t n_fabric =
        poll<dataplane::process_fabric_burst>(a.fabric_port, q, ctx, c, to_host, t0);

    // Path health probes waiting for the fabric port (worker 0 only; one ring check). The
    // buffer holds fewer than kBurstSize here: the host burst flushed it otherwise.
    if (const uint16_t n_probe =
            dataplane::take_probe_tx(ctx, &to_fabric.pkts[to_fabric.count], kBurstSize);
        unlikely(n_probe != 0)) {
      to_fabric.count = uint16_t(to_fabric.count + n_probe);
      if (to_fabric.count >= kBurstSize) flush(to_fabric, c);
    }
    // Partly filled buffers go out when both RX queues came back empty (nothing more to
    // coalesce: lowest latency at low load) or when the drain period has passed.
    if ((n_host | n_fabric) == 0 || t0 - last_drain >= a.drain_tsc) {
      if (to_fabric.count | to_host.count) {
        const uint64_t t1 = rte_rdtsc();
        flush(to_fabric, c);
        flush(to_host, c);
        c.busy_tsc += rte_rdtsc() - t1;
      }
      last_drain = t0;
    }
    rte_rcu_qsbr_quiescent(qsbr, reader);
  }

  flush(to_fabric, c);
  flush(to_host, c);
  rte_rcu_qsbr_thread_offline(qsbr, reader);
  return 0;
}

}  // namespace srv6gw::app
