// SPDX-License-Identifier: BSD-3-Clause
// Per-packet path selection over a CompiledPolicy. The per-worker state (smooth weighted
// round-robin cursors, flowlet table) lives in a SelectorState owned by exactly one worker:
// no atomics, no sharing. Everything here is inline: it runs once per encapsulated packet.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>

#include "net/addr.hpp"
#include "net/hash.hpp"
#include "policy/compiled_policy.hpp"

namespace srv6gw::policy {

// Smooth weighted round robin (nginx): each step every member gains its weight, the largest
// current value wins and pays back the total. Over every cycle of swrr_total (normalised)
// steps each member is chosen exactly its weight times, interleaved as evenly as possible.
struct alignas(64) SwrrState {
  uint64_t version = 0;  // CompiledPolicy::version the cursors belong to
  int32_t current[kMaxPaths];
};

// Flowlet table entry. `tag` packs the policy lineage (24 bits) and the path index (8 bits)
// so one compare tells whether the entry belongs to this policy's layout.
struct FlowletEntry {
  uint64_t last_tsc = 0;
  uint32_t flow_hash = 0;
  uint32_t tag = 0;  // lineage << 8 | path; 0 = empty (lineages start at 1)
};

// 4-way set-associative: one set is one cache line. A direct-mapped table let two active
// QPs that share a slot evict each other and move mid-flowlet; here an active entry is never
// evicted (only empty or idle ones are reused).
inline constexpr unsigned kFlowletWays = 4;
struct alignas(64) FlowletSet {
  FlowletEntry way[kFlowletWays];
};
inline constexpr unsigned kFlowletSetBits = 12;
inline constexpr unsigned kFlowletSets = 1u << kFlowletSetBits;
inline constexpr unsigned kFlowletEntries = kFlowletSets * kFlowletWays;

// One worker's selection state. Sized for the gateway's policy-slot capacity; owned by the
// worker context (written only by its worker).
struct SelectorState {
  std::unique_ptr<SwrrState[]> swrr;      // [slot]
  std::unique_ptr<FlowletSet[]> flowlet;  // [kFlowletSets]
  uint32_t slots = 0;

  explicit SelectorState(uint32_t slot_capacity)
      : swrr(new SwrrState[slot_capacity]()),
        flowlet(new FlowletSet[kFlowletSets]()),
        slots(slot_capacity) {}
};

// murmur3 finaliser: spreads the CRC's bits so the top bits index the bucket table.
inline uint32_t mix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

// Flow identity for per-flow selection: inner source, inner destination and DestQP (the UDP
// source port is left out on purpose: the QP is the ordering domain of RDMA). Defined as
// CRC32C from seed 0x9E3779B9 ^ family over src, dst, then DestQP, murmur-finalised; the data
// plane computes it from the packet's shared address-pair CRC (net/hash.hpp).
inline constexpr uint32_t kFlowHashSeed = 0x9E3779B9u;

inline uint32_t flow_hash_from_pair_crc(uint32_t pair_crc, net::Family family, uint32_t dest_qp) {
  constexpr uint32_t kSeedZeros = net::crc32c_zeros_32(kFlowHashSeed);
  const uint32_t c = pair_crc ^ kSeedZeros ^ net::crc32c_zeros_32_byte(uint8_t(family));
  return mix32(net::crc32c_u64(c, dest_qp));
}

inline uint32_t flow_hash(const net::IpAddr& src, const net::IpAddr& dst, uint32_t dest_qp) {
  return flow_hash_from_pair_crc(net::crc32c_pair(src.bytes.data(), dst.bytes.data()), src.family,
                                 dest_qp);
}

inline uint8_t select_by_flow(const CompiledPolicy& p, uint32_t hash) {
  return p.buckets[hash >> (32 - kBucketBits)];
}

inline uint8_t select_swrr(const CompiledPolicy& p, SwrrState& s) {
  const unsigned n = p.active_count;
  if (__builtin_expect(s.version != p.version, 0)) {
    std::memset(s.current, 0, sizeof(int32_t) * n);
    s.version = p.version;
  }
  unsigned best = 0;
  int32_t best_value = INT32_MIN;
  for (unsigned i = 0; i < n; ++i) {
    s.current[i] += p.swrr_weight[i];
    if (s.current[i] > best_value) {
      best_value = s.current[i];
      best = i;
    }
  }
  s.current[best] -= p.swrr_total;
  return p.active[best];
}

// A flow keeps its path while packets arrive less than flowlet_gap_tsc apart and the path is
// still usable; otherwise the next flowlet is placed by SWRR (weight-exact over flowlets).
// When all ways of the flow's set hold active flowlets (more concurrent flows than the table
// tracks), the flow is placed by its hash like flow mode: it stays put rather than evicting
// another flow in mid-flowlet.
inline uint8_t select_flowlet(const CompiledPolicy& p, SwrrState& s, FlowletSet* table,
                              uint32_t hash, uint64_t now_tsc) {
  FlowletSet& set = table[hash & (kFlowletSets - 1)];
  const uint32_t lineage_tag = (p.lineage & 0xFFFFFFu) << 8;
  FlowletEntry* victim = nullptr;
  uint64_t victim_idle = 0;
  for (FlowletEntry& e : set.way) {
    if (e.flow_hash == hash && e.tag != 0) {
      const uint8_t path = uint8_t(e.tag & 0xFF);
      if ((e.tag & ~0xFFu) == lineage_tag && now_tsc - e.last_tsc <= p.flowlet_gap_tsc &&
          __builtin_expect(p.usable(path), 1)) {
        e.last_tsc = now_tsc;
        return path;
      }
      victim = &e;  // this flow's own entry: its flowlet ended (or its path went away)
      break;
    }
    const uint64_t idle = e.tag == 0 ? UINT64_MAX : now_tsc - e.last_tsc;
    if (idle > p.flowlet_gap_tsc && (victim == nullptr || idle > victim_idle)) {
      victim = &e;
      victim_idle = idle;
    }
  }
  if (__builtin_expect(victim == nullptr, 0)) return select_by_flow(p, hash);
  const uint8_t path = select_swrr(p, s);
  victim->flow_hash = hash;
  victim->tag = lineage_tag | path;
  victim->last_tsc = now_tsc;
  return path;
}

// Picks the segment list for one packet. `slot` indexes the worker's SWRR state, `hash` is
// flow_hash() of the packet, `opcode` its BTH opcode. Returns kNoPath when nothing is usable.
inline uint8_t select_path(const CompiledPolicy& p, uint32_t slot, uint32_t hash, uint8_t opcode,
                           uint64_t now_tsc, SelectorState& st) {
  if (__builtin_expect(p.active_count == 0, 0)) return kNoPath;
  switch (p.mode) {
    case config::SelectionMode::flow:
    case config::SelectionMode::adaptive:
      return select_by_flow(p, hash);
    case config::SelectionMode::packet:
      return select_swrr(p, st.swrr[slot]);
    case config::SelectionMode::selective:
      return p.sprays(opcode) ? select_swrr(p, st.swrr[slot]) : select_by_flow(p, hash);
    case config::SelectionMode::flowlet:
      return select_flowlet(p, st.swrr[slot], st.flowlet.get(), hash, now_tsc);
  }
  return kNoPath;
}

}  // namespace srv6gw::policy
