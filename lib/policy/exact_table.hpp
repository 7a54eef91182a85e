// SPDX-License-Identifier: BSD-3-Clause
// The exact steering table: (family, DSCP, DestQP, destination) -> policy slot, for the exact
// and dst-any rules. One writer (the control thread under Runtime's mutex) edits it in place
// while workers look keys up without locks; entries are reclaimed through RCU QSBR.
//
// Why not rte_hash: its bulk lookup took ~138 instructions a packet (docs/design/
// performance.md) for work this key needs much less of: the key is 24 bytes, the hash a
// three-word CRC, and a lookup one cache line of signatures plus one entry.
//
// Layout. Buckets of one cache line hold 8 lanes (a 16-bit signature, 0 = empty, and an
// entry index); keys and slots live in a separate entry array. A key goes to the first bucket
// with a free lane from its home bucket on (linear probing); each bucket counts the keys
// that passed it on their way to a later bucket (`overflow`), so a lookup stops at the first
// bucket whose count is zero. Keys never move
// once placed, so a reader never misses a key that is present for its whole lookup. With at
// least twice as many lanes as entries, nearly every key sits in its home bucket.
//
// Publication (x86 TSO; the atomics say what orders what):
//   insert: entry written, overflow counts along the probe path raised, lane's entry index,
//           then its signature (release).
//   update: the entry's slot, one atomic store (no window without the key).
//   delete: the lane's signature cleared, counts lowered, the entry index handed to the RCU
//           defer queue: it is reused only after every worker passed a quiescent state, so a
//           reader still holding it compares against the key it was looking for.
// A lane freed by a delete is reused at once: a reader that loaded its old signature then
// reads whichever entry the lane names and compares keys, so it never returns a wrong slot.
#pragma once

#include <rte_prefetch.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "net/hash.hpp"

struct rte_rcu_qsbr;
struct rte_rcu_qsbr_dq;

namespace srv6gw::policy {

// The hash of a key from its parts: `head` = family, DSCP and DestQP as one word
// (exact_key_head in steering.hpp), `addr16` the destination's 16 bytes (IPv4 in the first
// four, the rest zero). CRC32C over the three words: the bucket is its low bits, the lane
// signature its high 16.
inline uint32_t exact_table_hash(uint64_t head, const uint8_t* addr16) {
  uint64_t a[2];
  std::memcpy(a, addr16, 16);
  return net::crc32c_u64(net::crc32c_u64(net::crc32c_u64(0, head), a[0]), a[1]);
}

class ExactTable {
 public:
  static constexpr uint32_t kMiss = UINT32_MAX;  // == policy::kNoSlot
  static constexpr unsigned kLanes = 8;

  // Room for `capacity` keys at once plus a quarter more, so inserts go on while deleted
  // entries wait for their grace period. Null with `error` set when memory or the defer
  // queue cannot be had. `name` must be unique (it names the DPDK objects).
  static std::unique_ptr<ExactTable> create(const std::string& name, uint32_t capacity,
                                            rte_rcu_qsbr* qsbr, int socket_id, std::string& error);
  ~ExactTable();
  ExactTable(const ExactTable&) = delete;
  ExactTable& operator=(const ExactTable&) = delete;

  // ---- Readers (workers inside an RCU read-side section; also the writer) ----

  void prefetch(uint32_t hash) const { rte_prefetch0(&buckets_[hash & bucket_mask_]); }

  // The slot of key (head, addr16) whose hash is `hash`, or kMiss.
  uint32_t lookup(uint64_t head, const uint8_t* addr16, uint32_t hash) const {
    uint64_t a[2];
    std::memcpy(a, addr16, 16);
    const uint16_t sig = signature(hash);
    uint32_t b = hash & bucket_mask_;
    // The home bucket holds nearly every key (at most half the lanes are taken): its hit is
    // the straight path, the walk beyond it a loop.
    uint32_t slot;
    if (__builtin_expect(match_in(buckets_[b], sig, head, a, slot), 1)) return slot;
    for (uint32_t probes = 0; probes < bucket_mask_; ++probes) {
      if (__atomic_load_n(&buckets_[b].overflow, __ATOMIC_RELAXED) == 0) break;
      b = (b + 1) & bucket_mask_;
      if (match_in(buckets_[b], sig, head, a, slot)) return slot;
    }
    return kMiss;
  }

  // ---- Writer (one thread at a time) ----

  // Inserts the key or changes its slot. False when no entry is free even after waiting a
  // bounded moment (~100 ms) for deleted ones to pass their grace period.
  bool upsert(uint64_t head, const uint8_t* addr16, uint32_t slot);
  // Removes the key; false when it is absent.
  bool erase(uint64_t head, const uint8_t* addr16);
  // The key's entry index (a position below positions()) and slot, or -1.
  int64_t find(uint64_t head, const uint8_t* addr16, uint32_t& slot) const;
  // Calls f(position, head, addr16, slot) for every key in the table.
  template <class F>
  void for_each(F&& f) const {
    for (uint32_t b = 0; b <= bucket_mask_; ++b) {
      const Bucket& bk = buckets_[b];
      for (unsigned lane = 0; lane < kLanes; ++lane) {
        if (bk.sig[lane] == 0) continue;
        const Entry& e = entries_[bk.entry[lane]];
        f(bk.entry[lane], e.head, reinterpret_cast<const uint8_t*>(e.addr), e.slot);
      }
    }
  }
  uint32_t size() const { return size_; }
  uint32_t positions() const { return entry_count_; }
  uint32_t buckets() const { return bucket_mask_ + 1; }
  // Keys not in their home bucket (a measure of probing; for tests and stats).
  uint32_t displaced() const;

 private:
  struct alignas(64) Bucket {
    uint16_t sig[kLanes];    // 0 = empty lane. Writer: control; readers: workers
    uint32_t entry[kLanes];  // entry index of a lane. Writer: control; readers: workers
    uint32_t overflow;       // keys placed beyond this bucket past it. Writer: control
    uint32_t reserved[3];
  };
  static_assert(sizeof(Bucket) == 64);
  struct alignas(32) Entry {
    uint64_t head;     // written before publication, constant while reachable
    uint64_t addr[2];  // idem
    uint32_t slot;     // Writer: control (atomic store); readers: workers
    uint32_t reserved;
  };
  static_assert(sizeof(Entry) == 32);

  ExactTable() = default;

  static uint16_t signature(uint32_t hash) {
    const uint16_t s = uint16_t(hash >> 16);
    return s != 0 ? s : 1;
  }

  // Bit i set when lane i holds signature `sig`.
  static uint32_t lanes_with(const Bucket& bk, uint16_t sig) {
#if defined(__SSE2__)
    const __m128i sigs = _mm_load_si128(reinterpret_cast<const __m128i*>(bk.sig));
    const __m128i eq = _mm_cmpeq_epi16(sigs, _mm_set1_epi16(int16_t(sig)));
    // One bit per lane from the 16-bit compare results' high bytes.
    return uint32_t(_mm_movemask_epi8(_mm_packs_epi16(eq, _mm_setzero_si128())));
#else
    uint32_t m = 0;
    for (unsigned lane = 0; lane < kLanes; ++lane)
      m |= uint32_t(__atomic_load_n(&bk.sig[lane], __ATOMIC_RELAXED) == sig) << lane;
    return m;
#endif
  }

  // The key's slot when bucket `bk` holds it.
  bool match_in(const Bucket& bk, uint16_t sig, uint64_t head, const uint64_t* a,
                uint32_t& slot) const {
    for (uint32_t match = lanes_with(bk, sig); match != 0; match &= match - 1) {
      const unsigned lane = unsigned(__builtin_ctz(match));
      const Entry& e = entries_[__atomic_load_n(&bk.entry[lane], __ATOMIC_ACQUIRE)];
      if (((e.head ^ head) | (e.addr[0] ^ a[0]) | (e.addr[1] ^ a[1])) == 0) {
        slot = __atomic_load_n(&e.slot, __ATOMIC_RELAXED);
        return true;
      }
    }
    return false;
  }

  // The bucket and lane of a key, or false.
  bool locate(uint64_t head, const uint64_t* a, uint32_t hash, uint32_t& bucket,
              unsigned& lane) const;
  bool take_entry(uint32_t& index);
  static void reclaim(void* table, void* elements, unsigned n);

  Bucket* buckets_ = nullptr;
  Entry* entries_ = nullptr;
  uint32_t bucket_mask_ = 0;
  uint32_t entry_count_ = 0;
  // Writer only below.
  uint32_t size_ = 0;
  std::vector<uint32_t> free_;  // entry indexes usable now
  rte_rcu_qsbr_dq* defer_ = nullptr;
};

}  // namespace srv6gw::policy
