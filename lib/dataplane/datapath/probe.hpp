// SPDX-License-Identifier: BSD-3-Clause
// Worker side of the path health probes (dataplane/probe.hpp has the picture and the types
// shared with the prober).
#pragma once

#include <cstdint>

#include "dataplane/probe.hpp"

struct rte_mbuf;

namespace srv6gw::policy {
struct Settings;
}

namespace srv6gw::dataplane {

struct WorkerContext;

// The Ethernet header of a probe frame toward the fabric (requests from the prober, replies
// reflected by a worker). With fabric-vlan on (`s`: the rail's settings) it carries the
// fabric 802.1Q tag with the PCP of the probe's traffic class under the DSCP->PCP map, the
// tag encapsulated traffic of that class gets: a fabric that requires the tag drops untagged
// frames, and a probe in another PFC class would not measure the class it stands for.
// probe_l2_len: 14, or 18 with the tag. write_probe_l2 writes that many bytes at `frame`.
unsigned probe_l2_len(const policy::Settings& s);
void write_probe_l2(uint8_t* frame, const uint8_t* dst_mac, const uint8_t* src_mac,
                    const policy::Settings& s, uint8_t traffic_class);

// Worker side. `l3_offset` is where the outer IPv6 header starts in the frame (after the
// Ethernet header and VLAN tags). Consumes `m` (reflected, handed over, or dropped and
// counted). Cold: called only for packets to an end-probe SID.
void handle_probe(WorkerContext& w, rte_mbuf* m, uint16_t l3_offset, uint64_t now_tsc);

// Worker side: moves up to `max` mbufs waiting on the probe TX ring into `out` (fabric TX);
// only the worker that drains its rail's ring (the rail's first) gets any.
uint16_t take_probe_tx(WorkerContext& w, rte_mbuf** out, uint16_t max);

}  // namespace srv6gw::dataplane
