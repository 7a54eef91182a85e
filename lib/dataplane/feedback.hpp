// SPDX-License-Identifier: BSD-3-Clause
// Congestion feedback from the data plane to the local SR engine: the event record the
// workers put on the multi-producer/single-consumer ring, the SRH Tag wire format of path-id
// reflection, and the two small tables the reflection and the fallback blame rely on.
// Plain data, no DPDK: the engine side (lib/engine) and tests include it without EAL.
// docs/design/engine.md describes the wire format and why it is the Tag.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>

#include "net/addr.hpp"
#include "net/hash.hpp"

namespace srv6gw::dataplane {

// ---- SRH Tag wire format ----
// Bit 15 set: "reflected": bits 0..14 are the path id of the *receiver's* own segment list
// that carried CE-marked traffic (the CNP's destination gateway should blame it). Bit 15
// clear: bits 0..14 are the sender's own path id (what every encapsulated packet carries).
// Our path ids are therefore below 0x8000 (config::validate enforces it).
inline constexpr uint16_t kTagReflected = 0x8000;
inline constexpr uint16_t kTagPathMask = 0x7FFF;

enum class FeedbackKind : uint8_t {
  ce_decap,   // decapsulated packet whose outer ECN was CE (tag = the remote's path id)
  cnp_decap,  // decapsulated CNP (BTH opcode 0x81) toward our host: congestion on our side
  cnp_encap,  // CNP our host sent (we saw CE toward it earlier); tag = what we wrote
};

// Flags of a FeedbackEvent.
inline constexpr uint8_t kFeedbackHasTag =
    0x01;                                       // the packet carried a path id (SRH Tag or source)
inline constexpr uint8_t kFeedbackIpv6 = 0x02;  // inner addresses are IPv6 (else IPv4 in 0..3)

// One event, 48 bytes, copied into the ring by value (rte_ring elem API, esize 48).
struct FeedbackEvent {
  uint64_t tsc = 0;  // worker TSC when seen
  FeedbackKind kind = FeedbackKind::ce_decap;
  uint8_t flags = 0;
  uint16_t tag = 0;      // raw SRH Tag (see the wire format above)
  uint32_t dest_qp = 0;  // BTH DestQP of the inner packet
  uint8_t inner_src[16];
  uint8_t inner_dst[16];

  net::IpAddr src() const { return addr(inner_src); }
  net::IpAddr dst() const { return addr(inner_dst); }

 private:
  net::IpAddr addr(const uint8_t* b) const {
    net::IpAddr a;
    a.family = (flags & kFeedbackIpv6) ? net::Family::ipv6 : net::Family::ipv4;
    std::memcpy(a.bytes.data(), b, 16);
    return a;
  }
};
static_assert(sizeof(FeedbackEvent) == 48, "ring element size");

// Events the ring holds (power of two). At 48 B a record this is 768 KiB.
inline constexpr unsigned kFeedbackRingSize = 16384;

// Hash of an inner host pair, order-sensitive, for the two tables below: CRC32C from seed
// 0x2545F491 over both addresses, folded; never 0. The encap path computes it from the
// packet's shared address-pair CRC (net/hash.hpp).
inline uint32_t pair_hash_from_pair_crc(uint32_t pair_crc) {
  constexpr uint32_t kSeedZeros = net::crc32c_zeros_32(0x2545F491u);
  uint32_t c = pair_crc ^ kSeedZeros;
  c ^= c >> 15;   // the table index takes the low bits
  return c | 1u;  // never 0: 0 marks an empty entry
}

inline uint32_t pair_hash(const net::IpAddr& a, const net::IpAddr& b) {
  return pair_hash_from_pair_crc(net::crc32c_pair(a.bytes.data(), b.bytes.data()));
}

// ---- Reflection table (shared by the workers of one Gateway) ----
// Written on decap when the outer header was CE (key = pair(remote src, local dst)), read on
// encap of a CNP our host sends back (key = pair(CNP dst, CNP src), the same pair). Decap and
// encap of one conversation usually run on different workers (RSS hashes different headers),
// hence shared; touched only on CE and on CNPs, so the sharing costs nothing per packet.
// Entry: key (32) | coarse time (16, units of 2^16 TSC cycles) | tag (16, reflected bit set).
inline constexpr unsigned kReflectBits = 12;
inline constexpr unsigned kReflectEntries = 1u << kReflectBits;
inline constexpr unsigned kReflectTimeShift = 16;

struct alignas(64) ReflectTable {
  std::atomic<uint64_t> entries[kReflectEntries] = {};
  // A CE older than this (in coarse units) is not reflected any more. Set by the Gateway.
  uint16_t max_age = 0;
  // Configuration (engine/reflect): written by the control thread, read on CE and CNPs.
  std::atomic<bool> enabled{true};

  void record(uint32_t key, uint16_t remote_path, uint64_t tsc) {
    const uint64_t v = uint64_t(key) << 32 | uint64_t(uint16_t(tsc >> kReflectTimeShift)) << 16 |
                       uint16_t(kTagReflected | (remote_path & kTagPathMask));
    std::atomic<uint64_t>& e = entries[key & (kReflectEntries - 1)];
    if (e.load(std::memory_order_relaxed) != v) e.store(v, std::memory_order_relaxed);
  }
  // The reflected tag for this pair, or 0 when none is fresh.
  uint16_t lookup(uint32_t key, uint64_t tsc) const {
    if (!enabled.load(std::memory_order_relaxed)) return 0;
    const uint64_t v = entries[key & (kReflectEntries - 1)].load(std::memory_order_relaxed);
    if (uint32_t(v >> 32) != key) return 0;
    const uint16_t age = uint16_t(uint16_t(tsc >> kReflectTimeShift) - uint16_t(v >> 16));
    return age <= max_age ? uint16_t(v) : 0;
  }
};

// ---- Recent path use (per worker) ----
// For the fallback blame when a CNP arrives without a reflected path id: how many packets each
// of our segment lists carried toward that remote host lately. A CNP answers CE marks on
// packets sent some time before it (microseconds for an RNIC, milliseconds for a busy or
// emulated host), so the table keeps packet counts per list in two coarse epochs (current and
// previous, an epoch = 2^shift TSC cycles, about 5 ms): the engine blames the lists in
// proportion to their use over the last one to two epochs. A flow that just moved off a
// congested list is then still blamed mostly on that list, not on the one it moved to.
// Written by the owning worker on every encapsulation (its own cache line per entry), read by
// the engine on the main lcore (relaxed atomics: a racy but well-defined read; an occasional
// torn view only blurs a heuristic).
inline constexpr unsigned kRecentBits = 12;
inline constexpr unsigned kRecentEntries = 1u << kRecentBits;
inline constexpr unsigned kRecentWays = 8;  // lists remembered per pair (least used replaced)
inline constexpr uint8_t kRecentNoPath = 0xFF;

struct alignas(64) RecentPathEntry {
  std::atomic<uint32_t> key{0};    // pair_hash(local host, remote host); 0 = empty
  std::atomic<uint32_t> slot{0};   // policy slot
  std::atomic<uint32_t> epoch{0};  // coarse time of `cur` (tsc >> shift, truncated)
  // Path index of each way, one byte per way (way i in bits 8i..8i+7), kRecentNoPath = free:
  // one word, so that the worker finds its way with one load and a byte match instead of a
  // loop of narrow loads on every packet.
  std::atomic<uint64_t> paths{~uint64_t(0)};
  std::atomic<uint16_t> cur[kRecentWays];   // packets this epoch
  std::atomic<uint16_t> prev[kRecentWays];  // packets the epoch before
  RecentPathEntry() {
    for (unsigned i = 0; i < kRecentWays; ++i) {
      cur[i].store(0, std::memory_order_relaxed);
      prev[i].store(0, std::memory_order_relaxed);
    }
  }
  static uint8_t way_path(uint64_t packed, unsigned way) { return uint8_t(packed >> (8 * way)); }
};
static_assert(sizeof(RecentPathEntry) == 64, "one cache line per entry");
static_assert(kRecentWays == 8, "the ways' path indexes are packed into one 64-bit word");

// The first way of `packed` holding path index `idx`, or kRecentWays (SWAR zero-byte search
// on packed ^ idx repeated: the lowest flagged byte is the first exact match, since the
// borrow that can flag a false byte only propagates upwards from a true zero byte).
inline unsigned recent_find_way(uint64_t packed, uint8_t idx) {
  constexpr uint64_t kOnes = 0x0101010101010101ull, kHighs = 0x8080808080808080ull;
  const uint64_t x = packed ^ (kOnes * idx);
  const uint64_t zero = (x - kOnes) & ~x & kHighs;
  return zero ? unsigned(__builtin_ctzll(zero)) / 8 : kRecentWays;
}

// Worker side: `packets` packets (at most 32768) of the pair `key` (policy `slot`) went out
// on path index `idx` in coarse epoch `epoch`. Single writer: plain load/store, no
// read-modify-write.
inline void recent_note(RecentPathEntry& e, uint32_t key, uint32_t slot, uint8_t idx,
                        uint32_t epoch, uint16_t packets = 1) {
  constexpr auto R = std::memory_order_relaxed;
  if (__builtin_expect(e.key.load(R) != key || e.slot.load(R) != slot, 0)) {
    // A new pair takes the entry: its first packet fills way 0 (no search, no victim: under
    // many pairs per entry this is the common case). The other ways are marked free and
    // their counters left as they are: nothing reads a free way's counters (recent_read and
    // the victim search skip free ways) and a way is zeroed when a path takes it. Clearing
    // all 16 counters here cost ~16 stores a packet on traffic that changes pairs.
    e.key.store(key, R);
    e.slot.store(slot, R);
    e.epoch.store(epoch, R);
    e.paths.store(~uint64_t(0xFF) | idx, R);
    e.cur[0].store(packets, R);
    e.prev[0].store(0, R);
    return;
  }
  if (const uint32_t was = e.epoch.load(R); __builtin_expect(was != epoch, 0)) {
    const bool next = epoch == was + 1;  // else idle for more than an epoch: history is stale
    for (unsigned i = 0; i < kRecentWays; ++i) {
      e.prev[i].store(next ? e.cur[i].load(R) : 0, R);
      e.cur[i].store(0, R);
    }
    e.epoch.store(epoch, R);
  }
  const uint64_t packed = e.paths.load(R);
  unsigned way = recent_find_way(packed, idx);
  if (__builtin_expect(way == kRecentWays, 0)) {  // a list not seen lately: replace the least used
    uint32_t victim_use = UINT32_MAX;
    way = 0;
    for (unsigned i = 0; i < kRecentWays; ++i) {
      const uint32_t use = RecentPathEntry::way_path(packed, i) == kRecentNoPath
                               ? 0
                               : uint32_t(e.cur[i].load(R)) + uint32_t(e.prev[i].load(R));
      if (use < victim_use) {
        victim_use = use;
        way = i;
      }
    }
    e.cur[way].store(0, R);
    e.prev[way].store(0, R);
    e.paths.store((packed & ~(uint64_t(0xFF) << (8 * way))) | uint64_t(idx) << (8 * way), R);
  }
  uint16_t c = e.cur[way].load(R);
  if (__builtin_expect(uint32_t(c) + packets > UINT16_MAX, 0)) {  // halve all, proportions stay
    for (unsigned i = 0; i < kRecentWays; ++i) {
      e.cur[i].store(uint16_t(e.cur[i].load(R) / 2), R);
      e.prev[i].store(uint16_t(e.prev[i].load(R) / 2), R);
    }
    c = e.cur[way].load(R);
  }
  e.cur[way].store(uint16_t(c + packets), R);
}

// Engine side: calls f(path index, packets) for the lists the pair `key` used in the current
// and the previous epoch as of `now_epoch` (an entry last written an epoch ago contributes
// its then-current counts only). Nothing when the entry belongs to another pair.
template <class F>
inline void recent_read(const RecentPathEntry& e, uint32_t key, uint32_t now_epoch, F f) {
  constexpr auto R = std::memory_order_relaxed;
  if (e.key.load(R) != key) return;
  const uint32_t epoch = e.epoch.load(R);
  const bool current = epoch == now_epoch;
  if (!current && epoch + 1 != now_epoch) return;  // older than the window
  const uint64_t packed = e.paths.load(R);
  for (unsigned i = 0; i < kRecentWays; ++i) {
    const uint8_t p = RecentPathEntry::way_path(packed, i);
    if (p == kRecentNoPath) continue;
    const uint32_t n = uint32_t(e.cur[i].load(R)) + (current ? uint32_t(e.prev[i].load(R)) : 0);
    if (n) f(p, n);
  }
}

// What Gateway::recent_paths reports: one of our paths and how many packets toward the pair
// it carried in the window (summed per worker; the same path may appear once per worker).
struct RecentUse {
  uint16_t path_id = 0;
  uint32_t packets = 0;
};

}  // namespace srv6gw::dataplane
