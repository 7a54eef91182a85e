// SPDX-License-Identifier: BSD-3-Clause
// Worker side of the path health probes (dataplane/probe.hpp has the picture and the types
// shared with the prober).
#pragma once

#include <cstdint>

#include "dataplane/probe.hpp"

struct rte_mbuf;

namespace srv6gw::dataplane {

struct WorkerContext;

// Worker side. `l3_offset` is where the outer IPv6 header starts in the frame (after the
// Ethernet header and VLAN tags). Consumes `m` (reflected, handed over, or dropped and
// counted). Cold: called only for packets to an end-probe SID.
void handle_probe(WorkerContext& w, rte_mbuf* m, uint16_t l3_offset, uint64_t now_tsc);

// Worker side: moves up to `max` mbufs waiting on the probe TX ring into `out` (fabric TX);
// only the worker that drains the ring (worker 0) gets any.
uint16_t take_probe_tx(WorkerContext& w, rte_mbuf** out, uint16_t max);

}  // namespace srv6gw::dataplane
