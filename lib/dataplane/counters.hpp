// SPDX-License-Identifier: BSD-3-Clause
// Per-worker counters. Written only by the owning worker lcore with plain increments;
// read (racily, which is fine for monotonic 64-bit counters on x86-64) and summed by the
// control thread. Cache-line aligned so workers never share a line.
#pragma once

#include <array>
#include <cstdint>

#include "net/parse.hpp"
#include "srv6/decap.hpp"
#include "srv6/probe.hpp"

namespace srv6gw::dataplane {

// Reasons a packet is dropped by the data plane itself (parse/decap reasons are counted in
// their own arrays below).
enum class DropReason : uint8_t {
  steering_miss,        // RoCEv2 with no steering match and the miss action is drop
  non_roce_dropped,     // non-RoCE host traffic and the configured action is drop
  non_sid_dropped,      // fabric traffic not for one of our SIDs and the action is drop
  malformed,            // parser said the packet is broken (reason in parse_status)
  decap_refused,        // decap said no (reason in decap_status)
  no_usable_path,       // every segment list of the policy has effective weight 0
  no_headroom,          // could not prepend the encap header (and no chained segment possible)
  header_alloc_failed,  // chained header mbuf could not be allocated
  tx_full,              // the TX queue refused the packet
  oversize,             // frame in more than one mbuf segment (beyond the port MTU): not parsed
  probe_refused,        // a packet to our end-probe SID that is not a sound probe (probe_status)
  probe_ring_full,      // a reflected probe or a reply found its ring full
  count_
};
const char* to_string(DropReason r);

// 0 .. kBurstSize packets per RX poll (pipeline.hpp's kBurstSize; checked there).
inline constexpr size_t kRxBurstHistogramBuckets = 33;

struct alignas(64) WorkerCounters {
  uint64_t rx_host = 0, rx_fabric = 0;
  uint64_t rx_host_bytes = 0, rx_fabric_bytes = 0;
  uint64_t tx_host = 0, tx_fabric = 0;
  uint64_t tx_host_bytes = 0, tx_fabric_bytes = 0;
  uint64_t encap = 0, decap = 0;
  uint64_t passed_host_to_fabric = 0, passed_fabric_to_host = 0;
  uint64_t inner_ce_marked = 0;  // RFC 6040 copied CE onto the inner header
  uint64_t cnp_seen = 0;         // inner BTH opcode 0x81, either direction
  uint64_t outer_ce_seen = 0;    // decapsulated packets whose outer ECN was CE
  uint64_t chained_header = 0;   // encap used a prepended header segment
  // balanced mode: flows placed by hash because their flow-table set was full of active
  // flows (policy::SelectorState::balanced_overflow, copied once per host burst).
  uint64_t balanced_overflow = 0;
  // Local SR engine feedback (dataplane/feedback.hpp).
  uint64_t feedback_events = 0;   // events put on the feedback ring
  uint64_t feedback_dropped = 0;  // events lost because the ring was full (never waited for)
  uint64_t cnp_reflected = 0;     // CNPs we encapsulated with a reflected path id in the Tag
  // Path health probes (dataplane/probe.hpp).
  uint64_t probe_reflected = 0;  // requests to our end-probe SID answered in place
  uint64_t probe_replies = 0;    // replies to our end-probe SID handed to the prober
  uint64_t probe_tx = 0;         // probes taken from the probe TX ring for the fabric port
  std::array<uint64_t, size_t(srv6::probe::Status::count_)> probe_status{};
  std::array<uint64_t, size_t(DropReason::count_)> drops{};
  std::array<uint64_t, size_t(net::ParseStatus::count_)> parse_status{};
  std::array<uint64_t, size_t(srv6::DecapStatus::count_)> decap_status{};
  uint64_t bursts = 0;
  uint64_t busy_tsc = 0;  // TSC spent in processing stages (cycles per packet = busy/pkts)
  // TSC spent inside process_*_burst only (busy_tsc also holds the worker's RX and TX time).
  uint64_t pipeline_tsc = 0;
  // RX polls by burst size (index = packets returned, 0 = an empty poll), both ports.
  // Written by the worker loop of the daemon.
  std::array<uint64_t, kRxBurstHistogramBuckets> rx_burst_histogram{};
};

}  // namespace srv6gw::dataplane
