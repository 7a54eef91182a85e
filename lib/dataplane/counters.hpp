// SPDX-License-Identifier: BSD-3-Clause
// Per-worker counters. Written only by the owning worker lcore with plain increments;
// read (racily, which is fine for monotonic 64-bit counters on x86-64) and summed by the
// control thread. Cache-line aligned so workers never share a line.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <type_traits>

#include "net/parse.hpp"
#include "srv6/decap.hpp"
#include "srv6/probe.hpp"

namespace srv6gw::dataplane {

// Reasons a packet is dropped by the data plane itself (parse/decap reasons are counted in
// their own arrays below).
#define SRV6GW_DROP_REASONS(X)                                                                    \
  X(steering_miss,                                                                                \
    "steering_miss") /* RoCEv2 with no steering match and the miss action is drop */              \
  X(non_roce_dropped,                                                                             \
    "non_roce_dropped") /* non-RoCE host traffic and the configured action is drop */             \
  X(non_sid_dropped,                                                                              \
    "non_sid_dropped")      /* fabric traffic not for one of our SIDs and the action is drop */   \
  X(malformed, "malformed") /* parser said the packet is broken (reason in parse_status) */       \
  X(decap_refused, "decap_refused") /* decap said no (reason in decap_status) */                  \
  X(no_usable_path,                                                                               \
    "no_usable_path") /* every segment list of the policy has effective weight 0 */               \
  X(no_headroom,                                                                                  \
    "no_headroom") /* could not prepend the encap header (and no chained segment possible) */     \
  X(header_alloc_failed, "header_alloc_failed") /* chained header mbuf could not be allocated */  \
  X(tx_full, "tx_full")                         /* the TX queue refused the packet */             \
  X(oversize,                                                                                     \
    "oversize") /* frame in more than one mbuf segment (beyond the port MTU): not parsed */       \
  X(probe_refused,                                                                                \
    "probe_refused") /* a packet to our end-probe SID that is not a sound probe (probe_status) */ \
  X(probe_ring_full, "probe_ring_full") /* a reflected probe or a reply found its ring full */    \
  X(pause_storm,                                                                                  \
    "pause_storm")      /* lossless: egress took nothing past the storm bound (PFC watchdog) */   \
  X(too_big, "too_big") /* IP packet above its port's configured MTU */                           \
  X(held_at_stop,                                                                                 \
    "held_at_stop") /* lossless: still held (egress refused them) when the worker stopped */

enum class DropReason : uint8_t { SRV6GW_ENUM_MEMBERS(SRV6GW_DROP_REASONS) count_ };
inline constexpr auto kDropReasonNames = SRV6GW_ENUM_NAMES(SRV6GW_DROP_REASONS);
static_assert(kDropReasonNames.size() == size_t(DropReason::count_));
const char* to_string(DropReason r);

// 0 .. kBurstSize packets per RX poll (datapath/burst.hpp's kBurstSize; the worker checks).
inline constexpr size_t kRxBurstHistogramBuckets = 33;

// Every plain counter of a worker, once: X(member) /* meaning */. The struct's fields, the
// sum over workers, the stats JSON, telemetry and the gRPC WorkerStats (by field name) are
// all expanded from this list: adding a counter touches one line (and the proto, whose
// field the agent-convert test requires).
#define SRV6GW_WORKER_COUNTERS(X) \
  X(rx_host) X(rx_fabric)                                                                   \
  X(rx_host_bytes) X(rx_fabric_bytes)                                                       \
  X(tx_host) X(tx_fabric)                                                                   \
  X(tx_host_bytes) X(tx_fabric_bytes)                                                       \
  X(encap) X(decap)                                                                         \
  X(passed_host_to_fabric) X(passed_fabric_to_host)                                         \
  X(inner_ce_marked) /* RFC 6040 copied CE onto the inner header */                         \
  X(cnp_seen)        /* inner BTH opcode 0x81, either direction */                          \
  X(outer_ce_seen)   /* decapsulated packets whose outer ECN was CE */                      \
  X(chained_header)  /* encap used a prepended header segment */                            \
  /* balanced mode: flows placed by hash because their flow-table set was full of active */ \
  /* flows (policy::SelectorState::balanced_overflow, copied once per host burst). */       \
  X(balanced_overflow)                                                                      \
  /* Local SR engine feedback (dataplane/feedback.hpp). */                                  \
  X(feedback_events)  /* events put on the feedback ring */                                 \
  X(feedback_dropped) /* events lost because the ring was full (never waited for) */        \
  X(cnp_reflected)    /* CNPs we encapsulated with a reflected path id (Tag or source) */ \
  /* Path health probes (dataplane/probe.hpp). */                                           \
  X(probe_reflected) /* requests to our end-probe SID answered in place */                  \
  X(probe_replies)   /* replies to our end-probe SID handed to the prober */                \
  X(probe_tx)        /* probes taken from the probe TX ring for the fabric port */          \
  X(bursts)                                                                                 \
  X(busy_tsc) /* TSC spent in processing stages (cycles per packet = busy/pkts) */          \
  /* TSC inside process_*_burst only (busy_tsc also holds the worker's RX and TX time). */  \
  X(pipeline_tsc)                                                                            \
  /* Lossless forwarding (apps/srv6gw/tx_queue.hpp, docs/design/lossless.md). */                   \
  X(backlog_to_fabric)     /* frames held for the fabric TX queue now (a gauge) */          \
  X(backlog_to_host)       /* frames held for the host TX queue now (a gauge) */            \
  X(paused_host_tsc)       /* TSC the host ingress was not polled (backlog full) */         \
  X(paused_fabric_tsc)     /* TSC the fabric ingress was not polled (backlog full) */       \
  X(ingress_pauses)        /* times an ingress was paused because its backlog was full */   \
  X(ecn_ce_marked)         /* ECT frames given CE while their backlog was over threshold */ \
  X(pause_storms)          /* times the pause-storm watchdog fired */                       \
  /* Fabric VLAN (docs/design/vlan-jumbo.md). */                                            \
  X(fabric_vlan_tagged_out) /* encapsulated frames sent with the fabric 802.1Q tag */       \
  X(fabric_vlan_tagged_in)  /* tagged fabric frames to our decap SIDs */                    \
  X(chained_in)             /* frames of several mbuf segments handled (MTU configured) */ \
  /* Rails (docs/design/rails.md): RoCEv2 whose steering match is a policy scoped to other */ \
  /* rails; it then took the steering-miss action (passed, or dropped as steering_miss). */  \
  X(steering_off_rail)                                                                       \
  /* Per egress: storms started and ended (egress took frames again); started - ended > 0 */ \
  /* while one lasts. The control thread raises the pause_storm events from these. */        \
  X(storms_to_fabric)                                                                        \
  X(storm_ends_to_fabric)                                                                    \
  X(storms_to_host)                                                                          \
  X(storm_ends_to_host)

// Every count by reason, once: X(member, names, prefix). `names` is the reason list the
// array is indexed by; `prefix` names the reason in gRPC's flat drop list, where entry 0
// (ok) of a status list is left out because it is not a drop.
#define SRV6GW_WORKER_COUNTER_GROUPS(X)              \
  X(drops, kDropReasonNames, "")                     \
  X(parse_status, net::kParseStatusNames, "parse.")  \
  X(decap_status, srv6::kDecapStatusNames, "decap.") \
  X(probe_status, srv6::probe::kStatusNames, "probe.")

struct alignas(64) WorkerCounters {
#define SRV6GW_COUNTER_FIELD_(member) uint64_t member = 0;
  SRV6GW_WORKER_COUNTERS(SRV6GW_COUNTER_FIELD_)
#undef SRV6GW_COUNTER_FIELD_
#define SRV6GW_COUNTER_GROUP_FIELD_(member, names, prefix) \
  std::array<uint64_t, names.size()> member{};
  SRV6GW_WORKER_COUNTER_GROUPS(SRV6GW_COUNTER_GROUP_FIELD_)
#undef SRV6GW_COUNTER_GROUP_FIELD_
  // RX polls by burst size (index = packets returned, 0 = an empty poll), both ports.
  // Written by the worker loop of the daemon.
  std::array<uint64_t, kRxBurstHistogramBuckets> rx_burst_histogram{};
};

// One counter group: its name (the array member), its reason names and values.
struct CounterGroup {
  const char* name;
  const char* prefix;  // for gRPC's flat drop list (see SRV6GW_WORKER_COUNTER_GROUPS)
  std::span<const char* const> reasons;
  std::span<const uint64_t> values;
};

// Calls scalar(name, value) for every plain counter and group(CounterGroup) for every count
// by reason, in list order; `scalar` gets a reference (writable when `c` is). Control side
// (stats JSON, telemetry, gRPC conversion, tests).
template <class Counters, class Scalar, class Group>
requires std::is_same_v < std::remove_const_t<Counters>,
struct WorkerCounters > void for_each_counter(Counters& c, Scalar&& scalar, Group&& group) {
#define SRV6GW_VISIT_(member) scalar(#member, c.member);
  SRV6GW_WORKER_COUNTERS(SRV6GW_VISIT_)
#undef SRV6GW_VISIT_
#define SRV6GW_VISIT_GROUP_(member, names, prefix) \
  group(CounterGroup{#member, prefix, std::span<const char* const>(names), std::span(c.member)});
  SRV6GW_WORKER_COUNTER_GROUPS(SRV6GW_VISIT_GROUP_)
#undef SRV6GW_VISIT_GROUP_
}

// into += from, every counter (the control thread's sum over workers).
void accumulate(WorkerCounters& into, const WorkerCounters& from);

// Packets dropped, all reasons.
uint64_t total_drops(const WorkerCounters& c);

}  // namespace srv6gw::dataplane
