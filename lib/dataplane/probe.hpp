// SPDX-License-Identifier: BSD-3-Clause
// Path health probes in the data plane (docs/probing.md; wire format in srv6/probe.hpp).
//
//   main lcore (prober) --probe TX ring (mbufs, MP/SC)--> worker 0 --> fabric TX
//   worker: request to our end-probe SID -> reflected in place -> probe TX ring
//   worker: reply to our end-probe SID -> ProbeReply record -> reply ring (MP/SC) -> prober
//
// Probes cost the workers nothing per data packet: the only per-loop work is worker 0's
// dequeue attempt on the TX ring (one cache line the prober writes about once per interval).
// Requests are reflected by the worker that receives them, without a punt: a reply is the
// request rewritten in place (srv6::probe::reflect), so the remote's RTT sample does not
// include a trip through its control thread.
#pragma once

#include <cstdint>

struct rte_mbuf;

namespace srv6gw::dataplane {

struct WorkerContext;

// A reply that came back to one of our end-probe SIDs, 32 bytes, copied into the ring.
struct ProbeReply {
  uint64_t rx_tsc = 0;        // worker TSC when the reply's burst was received
  uint64_t tx_time = 0;       // echoed: the prober's TSC when it built the request
  uint64_t reflect_time = 0;  // the remote's clock when it reflected (informational)
  uint32_t seq = 0;
  uint16_t path_id = 0;
  uint16_t reserved = 0;
};
static_assert(sizeof(ProbeReply) == 32, "ring element size");

inline constexpr unsigned kProbeTxRingSize = 1024;     // mbufs waiting for worker 0
inline constexpr unsigned kProbeReplyRingSize = 4096;  // replies waiting for the prober

// Worker side. `l3_offset` is where the outer IPv6 header starts in the frame (after the
// Ethernet header and VLAN tags). Consumes `m` (reflected, handed over, or dropped and
// counted). Cold: called only for packets to an end-probe SID.
void handle_probe(WorkerContext& w, rte_mbuf* m, uint16_t l3_offset, uint64_t now_tsc);

// Worker side: moves up to `max` mbufs waiting on the probe TX ring into `out` (fabric TX);
// only the worker that drains the ring (worker 0) gets any.
uint16_t take_probe_tx(WorkerContext& w, rte_mbuf** out, uint16_t max);

}  // namespace srv6gw::dataplane
