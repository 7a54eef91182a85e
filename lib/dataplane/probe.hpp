// SPDX-License-Identifier: BSD-3-Clause
// Path health probes in the data plane (docs/design/probing.md; wire format in srv6/probe.hpp):
// what the prober (main lcore) and the workers share. The worker side is datapath/probe.hpp.
//
//   main lcore (prober) --rail's probe TX ring (mbufs, MP/SC)--> rail's first worker
//                                                                 --> rail's fabric TX
//   worker: request to our end-probe SID -> reflected in place -> its rail's probe TX ring
//   worker: reply to our end-probe SID -> ProbeReply record -> reply ring (MP/SC) -> prober
//
// Probes cost the workers nothing per data packet: the only per-loop work is the first worker's
// dequeue attempt on the TX ring (one cache line the prober writes about once per interval).
// Requests are reflected by the worker that receives them, without a punt: a reply is the
// request rewritten in place (srv6::probe::reflect), so the remote's RTT sample does not
// include a trip through its control thread.
#pragma once

#include <cstdint>

namespace srv6gw::dataplane {

// A reply that came back to one of our end-probe SIDs, 32 bytes, copied into the ring.
struct ProbeReply {
  uint64_t rx_tsc = 0;        // worker TSC when the reply's burst was received
  uint64_t tx_time = 0;       // echoed: the prober's TSC when it built the request
  uint64_t reflect_time = 0;  // the remote's clock when it reflected (informational)
  uint32_t seq = 0;
  uint16_t path_id = 0;
  uint16_t rail = 0;  // the receiving worker's rail (index into config::effective_rails())
};
static_assert(sizeof(ProbeReply) == 32, "ring element size");

inline constexpr unsigned kProbeTxRingSize = 1024;     // per rail: mbufs waiting for TX
inline constexpr unsigned kProbeReplyRingSize = 4096;  // replies waiting for the prober

}  // namespace srv6gw::dataplane
