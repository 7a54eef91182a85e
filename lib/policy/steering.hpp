// SPDX-License-Identifier: BSD-3-Clause
// Steering: which policy slot a RoCEv2 packet belongs to, most specific rule first:
//   1. exact (inner dst, DestQP)        rte_hash, lock-free readers, RCU-deferred key reuse
//   2. (inner dst, any QP)              same rte_hash, QP field = kAnyQp
//   3. DestQP range (optionally per dst) immutable sorted intervals, binary search
//   4. inner dst prefix                 IPv4: rte_lpm (RCU); IPv6: immutable PrefixTable
//   5. miss                             the configured miss action
// A rule may carry a DSCP match; at each level a rule with a matching DSCP beats one without.
// DSCP costs nothing unless such rules exist at that level (flags in SteeringView).
#pragma once

#include <rte_hash.h>
#include <rte_lpm.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "net/addr.hpp"
#include "net/hash.hpp"
#include "net/parse.hpp"

namespace srv6gw::policy {

inline constexpr uint32_t kNoSlot = UINT32_MAX;
inline constexpr uint8_t kAnyDscp = 0xFF;
inline constexpr uint32_t kAnyQp = 0xFFFFFFFFu;  // DestQP is 24 bits: never a real QP

// rte_hash key of levels 1 and 2. Every byte is defined (zero padding) so memcmp and the
// CRC hash see equal keys as equal. 32 bytes rather than the 24 it needs: rte_hash compares
// 32-byte keys with its vector compare (KEY_32_BYTES) instead of calling libc memcmp, and
// its CRC hash reads whole 8-byte words either way, through a uint64_t pointer: alignas(8)
// makes those loads aligned (UBSan checks them; no suppression is needed).
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

// The exact table's hash of a key (its rte_hash signature): Runtime creates the table with
// hash_func rte_hash_crc and init value 0, i.e. CRC32C over the four 8-byte words of the key
// (the padding word is zero). Computed inline from the key's parts, so that the bulk lookup
// (rte_hash_lookup_with_hash_bulk_data) needs no indirect hash call per key.
inline uint32_t exact_key_signature(uint64_t head, const uint8_t* addr16) {
  uint64_t a[2];
  std::memcpy(a, addr16, 16);
  uint32_t c = net::crc32c_u64(0, head);
  c = net::crc32c_u64(c, a[0]);
  c = net::crc32c_u64(c, a[1]);
  return net::crc32c_u64(c, 0);
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
// levels hold anything so empty levels (and DSCP variants) cost nothing. The rte_hash and
// rte_lpm are updated in place by the control thread (lock-free for readers); the flags
// are published before entries of a kind appear and withdrawn after the last one went.
struct SteeringView {
  const rte_hash* exact = nullptr;
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

inline uint32_t hash_lookup_slot(const rte_hash* h, const ExactKey& k) {
  void* data = nullptr;
  if (rte_hash_lookup_data(h, &k, &data) < 0) return kNoSlot;
  return uint32_t(reinterpret_cast<uintptr_t>(data));
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
    ExactKey k = make_exact_key(info.dst, info.bth.dest_qp, kAnyDscp);
    if (v.has_exact) {
      if (v.exact_dscp) {
        k.dscp = dscp;
        if (uint32_t s = hash_lookup_slot(v.exact, k); s != kNoSlot) return s;
        k.dscp = kAnyDscp;
      }
      if (uint32_t s = hash_lookup_slot(v.exact, k); s != kNoSlot) return s;
    }
    if (v.has_dst_any) {
      k.qp = kAnyQp;
      if (v.dst_any_dscp) {
        k.dscp = dscp;
        if (uint32_t s = hash_lookup_slot(v.exact, k); s != kNoSlot) return s;
        k.dscp = kAnyDscp;
      }
      if (uint32_t s = hash_lookup_slot(v.exact, k); s != kNoSlot) return s;
    }
  }
  return steer_after_hash(v, info);
}

// Most packets a steer_bulk() call takes (rte_hash bulk lookups take up to 64 keys).
inline constexpr unsigned kSteerBulkMax = RTE_HASH_LOOKUP_BULK_MAX;

// steer() of n <= kSteerBulkMax packets at once: slots[i] = steer(v, *infos[i]). Each hash
// level (and DSCP variant) is one rte_hash bulk lookup over the packets still unresolved,
// so the bucket and key loads of the whole burst overlap instead of forming a chain of
// dependent cache misses per packet. Same precedence as steer().
void steer_bulk(const SteeringView& v, const net::PacketInfo* const* infos, unsigned n,
                uint32_t* slots);

}  // namespace srv6gw::policy
