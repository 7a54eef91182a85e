// SPDX-License-Identifier: BSD-3-Clause
// Steering: which policy slot a RoCEv2 packet belongs to, most specific rule first:
//   1. exact (inner dst, DestQP)        ExactTable, lock-free readers, RCU-deferred reuse
//   2. (inner dst, any QP)              same ExactTable, QP field = kAnyQp
//   3. DestQP range (optionally per dst) immutable sorted intervals, binary search
//   4. inner dst prefix                 IPv4: rte_lpm (RCU); IPv6: immutable PrefixTable
//   5. miss                             the configured miss action
// A rule may carry a DSCP match; at each level a rule with a matching DSCP beats one without.
// DSCP costs nothing unless such rules exist at that level (flags in SteeringView).
#pragma once

#include <rte_lpm.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "net/addr.hpp"
#include "net/hash.hpp"
#include "net/parse.hpp"
#include "policy/exact_table.hpp"

namespace srv6gw::policy {

inline constexpr uint32_t kNoSlot = UINT32_MAX;
static_assert(ExactTable::kMiss == kNoSlot);
inline constexpr uint8_t kAnyDscp = 0xFF;
inline constexpr uint32_t kAnyQp = 0xFFFFFFFFu;  // DestQP is 24 bits: never a real QP

// Key of levels 1 and 2 as the control side handles it (diffs, batches, undo). Every byte is
// defined (zero padding) so memcmp sees equal keys as equal. The ExactTable stores the first
// 24 bytes (head word and address); the padding keeps the size a power of two.
struct alignas(8) ExactKey {
  uint8_t family = 0;
  uint8_t dscp = kAnyDscp;
  uint8_t zero[2] = {0, 0};
  uint32_t qp = 0;
  uint8_t addr[16] = {};
  uint8_t pad[8] = {};
};
static_assert(sizeof(ExactKey) == 32 && alignof(ExactKey) == 8);

// The first 8 bytes of a key (family, DSCP, zero, QP) as one word.
inline uint64_t exact_key_head(net::Family family, uint32_t qp, uint8_t dscp) {
  return uint64_t(uint8_t(family)) | uint64_t(dscp) << 8 | uint64_t(qp) << 32;
}

// Writes family, DSCP and QP (the first 8 bytes) with one 8-byte store: the hash then reads
// them back through store forwarding instead of stalling on four narrow stores.
inline void set_exact_key_head(ExactKey& k, net::Family family, uint32_t qp, uint8_t dscp) {
  const uint64_t word = exact_key_head(family, qp, dscp);
  std::memcpy(static_cast<void*>(&k), &word, sizeof word);
}

// The first 8 bytes of a key as one word (exact_key_head's value).
inline uint64_t exact_key_head(const ExactKey& k) {
  uint64_t word;
  std::memcpy(&word, static_cast<const void*>(&k), sizeof word);
  return word;
}

// Fills every byte of `k` (the padding included).
inline void set_exact_key(ExactKey& k, const net::IpAddr& dst, uint32_t qp, uint8_t dscp) {
  set_exact_key_head(k, dst.family, qp, dscp);
  std::memcpy(k.addr, dst.bytes.data(), 16);
  std::memset(k.pad, 0, sizeof k.pad);
}

inline ExactKey make_exact_key(const net::IpAddr& dst, uint32_t qp, uint8_t dscp) {
  ExactKey k;
  set_exact_key(k, dst, qp, dscp);
  return k;
}

// DestQP ranges. Overlapping rules of one (dst, dscp) group are resolved at build time into
// disjoint elementary intervals (the narrowest covering rule wins, then the earlier one), so
// lookup is a binary search. Group precedence: (dst, dscp) > (dst) > (dscp) > (any).
class QpRangeTable {
 public:
  struct Rule {
    bool has_dst = false;
    net::IpAddr dst;
    uint8_t dscp = kAnyDscp;
    uint32_t qp_low = 0, qp_high = 0;
    uint32_t slot = kNoSlot;
  };
  // `rules` in configuration order (the tie-break between equally narrow overlaps).
  explicit QpRangeTable(const std::vector<Rule>& rules);

  bool empty() const { return groups_.empty(); }
  size_t interval_count() const { return intervals_.size(); }

  uint32_t lookup(const net::IpAddr& dst, uint8_t dscp, uint32_t qp) const {
    if (has_dst_groups_) {
      if (has_dscp_groups_) {
        if (uint32_t s = lookup_group(key(true, dst, dscp), qp); s != kNoSlot) return s;
      }
      if (uint32_t s = lookup_group(key(true, dst, kAnyDscp), qp); s != kNoSlot) return s;
    }
    if (has_dscp_groups_) {
      if (uint32_t s = lookup_group(key(false, dst, dscp), qp); s != kNoSlot) return s;
    }
    return lookup_group(key(false, dst, kAnyDscp), qp);
  }

 private:
  struct GroupKey {
    uint8_t has_dst = 0;
    uint8_t family = 0;
    uint8_t dscp = kAnyDscp;
    uint8_t zero = 0;
    uint8_t addr[16] = {};
    friend bool operator<(const GroupKey& a, const GroupKey& b) {
      return std::memcmp(&a, &b, sizeof(GroupKey)) < 0;
    }
    friend bool operator==(const GroupKey& a, const GroupKey& b) {
      return std::memcmp(&a, &b, sizeof(GroupKey)) == 0;
    }
  };
  struct Group {
    GroupKey key;
    uint32_t first = 0, count = 0;  // into intervals_
  };
  struct Interval {
    uint32_t low, high, slot;
  };

  static GroupKey key(bool has_dst, const net::IpAddr& dst, uint8_t dscp) {
    GroupKey k;
    k.dscp = dscp;
    if (has_dst) {
      k.has_dst = 1;
      k.family = uint8_t(dst.family);
      std::memcpy(k.addr, dst.bytes.data(), 16);
    }
    return k;
  }
  uint32_t lookup_group(const GroupKey& k, uint32_t qp) const;

  std::vector<Group> groups_;  // sorted by key
  std::vector<Interval> intervals_;
  bool has_dst_groups_ = false;
  bool has_dscp_groups_ = false;
};

// Immutable longest-prefix match, one sorted array per prefix length present, searched from
// the longest length down: lookup costs (distinct lengths) x log2(rules of that length).
// Used for IPv6 prefixes (rte_lpm6 cannot be updated under concurrent readers) and for the
// DSCP-qualified prefixes of both families (entries carry the DSCP in their key).
class PrefixTable {
 public:
  struct Rule {
    std::array<uint8_t, 16> addr{};  // IPv4 in the first four bytes
    uint8_t length = 0;
    uint8_t dscp = kAnyDscp;
    uint32_t slot = kNoSlot;
  };
  explicit PrefixTable(const std::vector<Rule>& rules);

  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }

  uint32_t lookup(const uint8_t* addr16, uint8_t dscp) const;

 private:
  struct Entry {
    uint64_t hi, lo;  // masked address, big-endian halves
    uint32_t dscp, slot;
  };
  struct Level {
    uint64_t mask_hi, mask_lo;
    uint32_t first, count;
  };
  std::vector<Level> levels_;  // longest first
  std::vector<Entry> entries_;
};

// What a worker needs to steer, published inside the immutable View. The flags say which
// levels hold anything so empty levels (and DSCP variants) cost nothing. The ExactTable and
// rte_lpm are updated in place by the control thread (lock-free for readers); the flags
// are published before entries of a kind appear and withdrawn after the last one went.
struct SteeringView {
  const ExactTable* exact = nullptr;
  const rte_lpm* lpm4 = nullptr;
  const QpRangeTable* qp_ranges = nullptr;    // null when empty
  const PrefixTable* prefix6 = nullptr;       // null when empty
  const PrefixTable* dscp_prefix4 = nullptr;  // null when empty
  const PrefixTable* dscp_prefix6 = nullptr;  // null when empty
  bool has_exact = false, exact_dscp = false;
  bool has_dst_any = false, dst_any_dscp = false;
  bool has_prefix4 = false;
  uint32_t default4 = kNoSlot;  // 0.0.0.0/0 without DSCP (rte_lpm has no depth 0)
};

// The slot of key k in the exact table, or kNoSlot.
inline uint32_t hash_lookup_slot(const ExactTable* t, const ExactKey& k) {
  const uint64_t head = exact_key_head(k);
  return t->lookup(head, k.addr, exact_table_hash(head, k.addr));
}

// Levels 3 to 5 (QP ranges, prefixes, miss) for a packet the hash levels did not resolve.
inline uint32_t steer_after_hash(const SteeringView& v, const net::PacketInfo& info) {
  const uint8_t dscp = info.dscp;
  if (v.qp_ranges) {
    if (uint32_t s = v.qp_ranges->lookup(info.dst, dscp, info.bth.dest_qp); s != kNoSlot) return s;
  }
  if (info.family == net::Family::ipv4) {
    if (v.dscp_prefix4) {
      if (uint32_t s = v.dscp_prefix4->lookup(info.dst.bytes.data(), dscp); s != kNoSlot) return s;
    }
    if (v.has_prefix4) {
      uint32_t next_hop;
      if (rte_lpm_lookup(v.lpm4, info.dst.as_v4().host_order(), &next_hop) == 0) return next_hop;
    }
    return v.default4;
  } else {
    if (v.dscp_prefix6) {
      if (uint32_t s = v.dscp_prefix6->lookup(info.dst.bytes.data(), dscp); s != kNoSlot) return s;
    }
    if (v.prefix6) return v.prefix6->lookup(info.dst.bytes.data(), kAnyDscp);
  }
  return kNoSlot;
}

// Steering of one classified RoCEv2 packet: a policy slot or kNoSlot.
inline uint32_t steer(const SteeringView& v, const net::PacketInfo& info) {
  const uint8_t dscp = info.dscp;
  if (v.has_exact || v.has_dst_any) {
    const uint8_t* addr = info.dst.bytes.data();
    auto look_up = [&](uint32_t qp, uint8_t key_dscp) {
      const uint64_t head = exact_key_head(info.dst.family, qp, key_dscp);
      return v.exact->lookup(head, addr, exact_table_hash(head, addr));
    };
    if (v.has_exact) {
      if (v.exact_dscp) {
        if (uint32_t s = look_up(info.bth.dest_qp, dscp); s != kNoSlot) return s;
      }
      if (uint32_t s = look_up(info.bth.dest_qp, kAnyDscp); s != kNoSlot) return s;
    }
    if (v.has_dst_any) {
      if (v.dst_any_dscp) {
        if (uint32_t s = look_up(kAnyQp, dscp); s != kNoSlot) return s;
      }
      if (uint32_t s = look_up(kAnyQp, kAnyDscp); s != kNoSlot) return s;
    }
  }
  return steer_after_hash(v, info);
}

// Most packets a steer_bulk() call takes.
inline constexpr unsigned kSteerBulkMax = 64;

// steer() of n <= kSteerBulkMax packets at once: slots[i] = steer(v, *infos[i]). Each hash
// level (and DSCP variant) is one pass over the packets still unresolved, their buckets
// prefetched a pass ahead, so the cache misses of the whole burst overlap instead of forming
// a chain of dependent misses per packet. Same precedence as steer().
void steer_bulk(const SteeringView& v, const net::PacketInfo* const* infos, unsigned n,
                uint32_t* slots);

}  // namespace srv6gw::policy
