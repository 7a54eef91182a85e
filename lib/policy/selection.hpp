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

// balanced mode: one placed flow. `stamp` packs the load group the flow is counted in (top
// 16 bits) and the low 48 bits of the TSC of its last packet (idle times are taken modulo
// 2^48 cycles, about a day: far beyond any gap). `tag` as in FlowletEntry.
struct BalancedEntry {
  uint64_t stamp = 0;
  uint32_t flow_hash = 0;
  uint32_t tag = 0;  // lineage << 8 | path; 0 = empty
};
inline constexpr uint64_t kStampTscMask = (uint64_t(1) << 48) - 1;
// 4-way sets of one cache line, 4096 of them: 256 KB per worker, the flowlet table's size.
// A larger table touches as many lines over more pages, and is slower (the figures:
// docs/design/performance.md, "Selection modes"). A flow has two candidate sets
// (two-choice hashing) and a full pair of sets makes room by moving one of their flows to
// its other set, so 10k flows (0.61 of the 16384 ways) place without overflow
// (test_balanced.cpp, TenThousandFlowsFitAndMovedFlowsKeepTheirPaths).
inline constexpr unsigned kBalancedWays = 4;
struct alignas(64) BalancedSet {
  BalancedEntry way[kBalancedWays];
};
inline constexpr unsigned kBalancedSetBits = 12;
inline constexpr unsigned kBalancedSets = 1u << kBalancedSetBits;
inline constexpr unsigned kBalancedEntries = kBalancedSets * kBalancedWays;  // 16384 (256 KB)
static_assert(kBalancedEntries <= 65536, "entry indices are 16 bits");

// balanced mode: one load group's load as seen by one worker. The byte count is split
// over lanes chosen by the flow hash: with one counter, consecutive packets of a group
// chained through one memory location (load, add, store, then the next packet's load of
// the same address: docs/design/performance.md, "Selection modes"); with kByteLanes
// counters consecutive packets of different flows mostly add to different ones (summed).
inline constexpr unsigned kByteLanes = 4;
struct alignas(64) GroupLoad {
  uint32_t active = 0;  // placed flows not yet released (idle past the gap, re-placed)
  // inner bytes of every packet on the group's lists (monotonic), by lane; see bytes()
  uint64_t lane_bytes[kByteLanes] = {};
  uint64_t window_base = 0;   // bytes() when the current window started
  uint64_t window_prev = 0;   // bytes of the previous window (scaled to one window)
  uint64_t window_start = 0;  // TSC
  uint64_t bytes() const {
    uint64_t sum = 0;
    for (uint64_t b : lane_bytes) sum += b;
    return sum;
  }
};
static_assert(sizeof(GroupLoad) == 64, "one cache line per group");

inline unsigned byte_lane(uint32_t hash) {
  return (hash >> 24) & (kByteLanes - 1);
}

// One worker's selection state. Sized for the gateway's policy-slot capacity; owned by the
// worker context (written only by its worker).
struct SelectorState {
  std::unique_ptr<SwrrState[]> swrr;      // [slot]
  std::unique_ptr<FlowletSet[]> flowlet;  // [kFlowletSets]
  uint32_t slots = 0;
  // balanced mode: the placed flows (two-choice, 4-way sets), the loads per
  // group, and a dense list of the occupied entries (index = set * ways + way) with each
  // entry's position in it, so that placement can release idle flows a few at a time
  // without walking the whole table.
  std::unique_ptr<BalancedSet[]> balanced;  // [kBalancedSets]
  std::unique_ptr<GroupLoad[]> groups;      // [kMaxLoadGroups]
  std::unique_ptr<uint16_t[]> occupied;     // [kBalancedEntries], first n_occupied valid
  std::unique_ptr<uint16_t[]> position;     // [kBalancedEntries] entry -> index in occupied
  // [kBalancedSets] occupied entries whose first candidate set is this one but that live in
  // their second: 0 (the usual case) = a flow absent from its first set is absent.
  std::unique_ptr<uint16_t[]> spilled;
  uint32_t n_occupied = 0;
  uint32_t sweep_cursor = 0;
  uint64_t balanced_overflow = 0;  // flows placed by hash: their set was full of active flows

  explicit SelectorState(uint32_t slot_capacity)
      : swrr(new SwrrState[slot_capacity]()),
        flowlet(new FlowletSet[kFlowletSets]()),
        slots(slot_capacity),
        balanced(new BalancedSet[kBalancedSets]()),
        groups(new GroupLoad[kMaxLoadGroups]()),
        occupied(new uint16_t[kBalancedEntries]()),
        position(new uint16_t[kBalancedEntries]()),
        spilled(new uint16_t[kBalancedSets]()) {}
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

// ---- balanced mode ----
// Occupied entries examined (and released when idle past the gap) per placement: an idle
// flow stops counting within n_occupied / kBalancedSweep placements.
inline constexpr unsigned kBalancedSweep = 16;

inline uint32_t balanced_first_set(uint32_t hash) {
  return hash & (kBalancedSets - 1);
}
inline uint32_t balanced_second_set(uint32_t hash) {
  return (hash >> kBalancedSetBits) & (kBalancedSets - 1);
}

inline BalancedEntry& balanced_entry(SelectorState& st, uint32_t index) {
  return st.balanced[index / kBalancedWays].way[index % kBalancedWays];
}

// The flow in occupied entry `index` stops counting: its group's active flows, and the
// spill count of its first set when it lives in its second. The entry stays listed.
inline void balanced_uncount(SelectorState& st, uint32_t index) {
  const BalancedEntry& e = balanced_entry(st, index);
  GroupLoad& g = st.groups[e.stamp >> 48];
  if (g.active != 0) --g.active;
  const uint32_t first = balanced_first_set(e.flow_hash);
  if (index / kBalancedWays != first) --st.spilled[first];
}

// Takes entry `index` out: it stops counting and leaves the occupied list.
[[gnu::cold]] inline void balanced_release(SelectorState& st, uint32_t index) {
  balanced_uncount(st, index);
  balanced_entry(st, index).tag = 0;
  const uint32_t pos = st.position[index];
  const uint16_t last = st.occupied[--st.n_occupied];
  st.occupied[pos] = last;
  st.position[last] = uint16_t(pos);
}

// Recent bytes of a group: the current window plus the previous one, windows of `window`
// TSC cycles rotated lazily (only placement reads them). A window that ended long ago
// counts at its average rate.
inline uint64_t recent_bytes(GroupLoad& g, uint64_t now, uint64_t window) {
  const uint64_t elapsed = now - g.window_start;
  const uint64_t bytes = g.bytes();
  if (elapsed >= window) {
    const uint64_t in_window = bytes - g.window_base;
    g.window_prev = elapsed >= 2 * window
                        ? uint64_t((unsigned __int128)in_window * window / elapsed)
                        : in_window;
    g.window_base = bytes;
    g.window_start = now;
  }
  return bytes - g.window_base + g.window_prev;
}

// The active-set member whose load group carries the least relative to its weight in force
// (swrr_weight: weight x engine factor, gcd-reduced). Flows are compared by Webster's rule,
// the smallest (2 x active + 1) / weight: sequential placement then keeps every list within
// half a flow of its exact share in the usual cases (the D'Hondt rule, (active + 1) /
// weight, drifts a full flow with weights 3:2:1). Ties go to the fewer recent bytes per
// weight (so flows of unequal rate alternate instead of stacking), then to the first member
// counted from a start that the flow's hash chooses. A fixed start (the first list) made
// every gateway of a fabric send the same flows over the same first hop: collectives walk
// their peers in one order (NCCL: src+1, src+2, ...), so each source's k-th flow to another
// leaf, always to the same position in that leaf, took the k-th spine, and all flows into
// a host crossed one spine->leaf downlink (docs/design/fabricsim.md). The hash covers the source
// address, so the sources' choices among equally loaded lists are independent.
[[gnu::noinline]] inline unsigned balanced_pick(const CompiledPolicy& p, SelectorState& st,
                                                uint32_t hash, uint64_t now) {
  using u128 = unsigned __int128;
  const uint64_t window = p.idle_gap_tsc ? p.idle_gap_tsc : 1;
  const unsigned n = p.active_count;
  // The top 8 bits (the candidate sets use the low 24) scaled onto [0, n).
  unsigned i = unsigned((uint64_t(hash >> 24) * n) >> 8);
  unsigned best = i;
  uint64_t best_flows = 0, best_bytes = 0, best_weight = 1;
  for (unsigned k = 0; k < n; ++k, i = i + 1 == n ? 0 : i + 1) {
    GroupLoad& g = st.groups[p.load_group[p.active[i]]];
    const uint64_t flows = 2 * uint64_t(g.active) + 1;
    const uint64_t bytes = recent_bytes(g, now, window);
    const uint64_t weight = uint64_t(p.swrr_weight[i]);
    if (k != 0) {
      // a/wa < b/wb  <=>  a*wb < b*wa (weights > 0 in the active set)
      const u128 f_new = u128(flows) * best_weight, f_best = u128(best_flows) * weight;
      const u128 b_new = u128(bytes) * best_weight, b_best = u128(best_bytes) * weight;
      const bool better = p.balance_by == BalanceBy::flows
                              ? (f_new < f_best || (f_new == f_best && b_new < b_best))
                              : (b_new < b_best || (b_new == b_best && f_new < f_best));
      if (!better) continue;
    }
    best = i;
    best_flows = flows;
    best_bytes = bytes;
    best_weight = weight;
  }
  return best;
}

// Places flow `hash` in entry `index` (empty, or occupied by an idle flow or by this flow's
// own stale entry, which is reused in place: it keeps its place in the occupied list).
// Releases a few idle flows first, then picks the least loaded list.
[[gnu::noinline]] inline uint8_t balanced_place(const CompiledPolicy& p, SelectorState& st,
                                                uint32_t index, uint32_t hash, uint64_t now) {
  BalancedEntry& e = balanced_entry(st, index);
  const bool listed = e.tag != 0;
  if (listed) {
    balanced_uncount(st, index);
    e.stamp = (e.stamp & ~kStampTscMask) | (now & kStampTscMask);  // the sweep passes it by
  }
  for (unsigned k = 0; k < kBalancedSweep && st.n_occupied != 0; ++k) {
    if (st.sweep_cursor >= st.n_occupied) st.sweep_cursor = 0;
    const uint32_t candidate = st.occupied[st.sweep_cursor];
    const BalancedEntry& c = balanced_entry(st, candidate);
    if (((now - c.stamp) & kStampTscMask) > p.idle_gap_tsc)
      balanced_release(st, candidate);  // the last entry moved into the cursor's place
    else
      ++st.sweep_cursor;
  }
  const uint8_t path = p.active[balanced_pick(p, st, hash, now)];
  const uint16_t group = p.load_group[path];
  ++st.groups[group].active;
  e.flow_hash = hash;
  e.tag = (p.lineage & 0xFFFFFFu) << 8 | path;
  e.stamp = uint64_t(group) << 48 | (now & kStampTscMask);
  const uint32_t first = balanced_first_set(hash);
  if (index / kBalancedWays != first) ++st.spilled[first];
  if (!listed) {
    st.position[index] = uint16_t(st.n_occupied);
    st.occupied[st.n_occupied++] = uint16_t(index);
  }
  return path;
}

// Both candidate sets of a new flow hold only active flows: moves one of those flows to its
// own other candidate set when that has an empty or idle way (cuckoo hashing, one step; the
// moved flow keeps its list, so nothing reorders). Returns the freed entry, or -1.
[[gnu::cold, gnu::noinline]] inline int64_t balanced_make_room(const CompiledPolicy& p,
                                                               SelectorState& st,
                                                               const uint32_t (&sets)[2],
                                                               uint64_t now) {
  for (uint32_t from : sets) {
    for (unsigned wi = 0; wi < kBalancedWays; ++wi) {
      const uint32_t index = from * kBalancedWays + wi;
      BalancedEntry& x = balanced_entry(st, index);
      const uint32_t first = balanced_first_set(x.flow_hash);
      const uint32_t second = balanced_second_set(x.flow_hash);
      const uint32_t to = from == first ? second : first;
      if (to == from) continue;
      for (unsigned wj = 0; wj < kBalancedWays; ++wj) {
        const uint32_t target = to * kBalancedWays + wj;
        BalancedEntry& y = balanced_entry(st, target);
        if (y.tag != 0 && ((now - y.stamp) & kStampTscMask) <= p.idle_gap_tsc) continue;
        if (y.tag != 0) balanced_release(st, target);
        y = x;  // the flow moves: same list, group, stamp; its list slot follows it
        const uint32_t pos = st.position[index];
        st.occupied[pos] = uint16_t(target);
        st.position[target] = uint16_t(pos);
        if (from != first) --st.spilled[first];
        if (to != first) ++st.spilled[first];
        x.tag = 0;
        return int64_t(index);
      }
    }
  }
  return -1;
}

// A flow keeps its list while its packets arrive less than idle_gap_tsc apart, even when
// the engine lowers the list's factor or takes it out for congestion (moving then could
// reorder it); the next packet after a gap is placed afresh on the least-loaded usable
// list. A list that is down (CompiledPolicy::down_mask: probes lost, a controller's
// path-down) releases its flows at once: their packets are lost on it anyway, and a flow
// that keeps retransmitting into it might never go idle for a gap. A flow lives in
// one of two candidate sets (the first unless it was full of active flows; see
// balanced_make_room); when no room can be made the flow is placed by hash (counted in
// balanced_overflow): an active flow is never evicted. `bytes` (the packet's inner length)
// feeds the groups' recent bytes.
[[gnu::noinline]] inline uint8_t select_balanced_slow(const CompiledPolicy& p, SelectorState& st,
                                                      uint32_t hash, uint64_t now, uint32_t bytes) {
  const uint32_t lineage_tag = (p.lineage & 0xFFFFFFu) << 8;
  const uint32_t sets[2] = {balanced_first_set(hash), balanced_second_set(hash)};
  // The second set holds flows of this first set only when its spill count says so.
  const unsigned n_sets = st.spilled[sets[0]] != 0 && sets[1] != sets[0] ? 2 : 1;
  for (unsigned s = 0; s < n_sets; ++s) {
    BalancedSet& set = st.balanced[sets[s]];
    for (unsigned wi = 0; wi < kBalancedWays; ++wi) {
      BalancedEntry& e = set.way[wi];
      if (e.flow_hash != hash || e.tag == 0) continue;
      uint8_t path;
      if ((e.tag & ~0xFFu) == lineage_tag && ((now - e.stamp) & kStampTscMask) <= p.idle_gap_tsc &&
          !p.is_down(uint8_t(e.tag & 0xFF))) {
        e.stamp = (e.stamp & ~kStampTscMask) | (now & kStampTscMask);  // live in its second set
        path = uint8_t(e.tag & 0xFF);
      } else {
        // its gap ended, its list went down or its policy was rebuilt: placed again in the
        // same entry
        path = balanced_place(p, st, sets[s] * kBalancedWays + wi, hash, now);
      }
      st.groups[p.load_group[path]].lane_bytes[byte_lane(hash)] += bytes;
      return path;
    }
  }
  // A new flow: the emptiest or longest idle way of the first set, else of the second.
  int64_t victim = -1;
  for (uint32_t set_index : sets) {
    uint64_t victim_idle = 0;
    for (unsigned wi = 0; wi < kBalancedWays; ++wi) {
      const BalancedEntry& e = st.balanced[set_index].way[wi];
      const uint64_t idle = e.tag == 0 ? UINT64_MAX : (now - e.stamp) & kStampTscMask;
      if (idle > p.idle_gap_tsc && (victim < 0 || idle > victim_idle)) {
        victim = int64_t(set_index * kBalancedWays + wi);
        victim_idle = idle;
      }
    }
    if (victim >= 0) break;
  }
  if (__builtin_expect(victim < 0, 0)) victim = balanced_make_room(p, st, sets, now);
  if (__builtin_expect(victim < 0, 0)) {
    ++st.balanced_overflow;
    const uint8_t path = select_by_flow(p, hash);
    st.groups[p.load_group[path]].lane_bytes[byte_lane(hash)] += bytes;
    return path;
  }
  const uint8_t path = balanced_place(p, st, uint32_t(victim), hash, now);
  st.groups[p.load_group[path]].lane_bytes[byte_lane(hash)] += bytes;
  return path;
}

// The common case inline: the flow is live in its first set (one cache line, as flowlet).
inline uint8_t select_balanced(const CompiledPolicy& p, SelectorState& st, uint32_t hash,
                               uint64_t now, uint32_t bytes) {
  BalancedSet& set = st.balanced[balanced_first_set(hash)];
  const uint32_t lineage_tag = (p.lineage & 0xFFFFFFu) << 8;
  for (BalancedEntry& e : set.way) {
    if (e.flow_hash == hash && (e.tag & ~0xFFu) == lineage_tag &&
        ((now - e.stamp) & kStampTscMask) <= p.idle_gap_tsc && !p.is_down(uint8_t(e.tag & 0xFF))) {
      e.stamp = (e.stamp & ~kStampTscMask) | (now & kStampTscMask);
      st.groups[e.stamp >> 48].lane_bytes[byte_lane(hash)] += bytes;
      return uint8_t(e.tag & 0xFF);
    }
  }
  return select_balanced_slow(p, st, hash, now, bytes);
}

// Picks the segment list for one packet. `slot` indexes the worker's SWRR state, `hash` is
// flow_hash() of the packet, `opcode` its BTH opcode, `bytes` its inner length (balanced mode's
// recent bytes). Returns kNoPath when nothing is usable.
inline uint8_t select_path(const CompiledPolicy& p, uint32_t slot, uint32_t hash, uint8_t opcode,
                           uint64_t now_tsc, SelectorState& st, uint32_t bytes = 0) {
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
    case config::SelectionMode::balanced:
      return select_balanced(p, st, hash, now_tsc, bytes);
  }
  return kNoPath;
}

}  // namespace srv6gw::policy
