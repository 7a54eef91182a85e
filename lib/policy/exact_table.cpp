// SPDX-License-Identifier: BSD-3-Clause
// The writer side of the exact steering table (exact_table.hpp): placement, deletes, RCU
// reclamation of entries.
#include "policy/exact_table.hpp"

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>

#include <algorithm>

namespace srv6gw::policy {

std::unique_ptr<ExactTable> ExactTable::create(const std::string& name, uint32_t capacity,
                                               rte_rcu_qsbr* qsbr, int socket_id,
                                               std::string& error) {
  std::unique_ptr<ExactTable> t(new ExactTable());
  const uint64_t entries = std::max<uint64_t>(capacity, 64) + std::max<uint64_t>(capacity, 64) / 4;
  if (entries > (1ull << 30)) {
    error = "more than 2^30 entries";
    return nullptr;
  }
  // At least four lanes per entry rounded up to a power of two of 8-lane buckets: the table
  // is at most half full, so probing past the home bucket is rare.
  uint64_t buckets = 1;
  while (buckets * kLanes < entries * 2) buckets <<= 1;
  t->entry_count_ = uint32_t(entries);
  t->bucket_mask_ = uint32_t(buckets - 1);
  t->buckets_ = static_cast<Bucket*>(
      rte_zmalloc_socket(name.c_str(), buckets * sizeof(Bucket), alignof(Bucket), socket_id));
  t->entries_ = static_cast<Entry*>(
      rte_zmalloc_socket(name.c_str(), entries * sizeof(Entry), alignof(Entry), socket_id));
  if (!t->buckets_ || !t->entries_) {
    error = "cannot allocate " +
            std::to_string((buckets * sizeof(Bucket) + entries * sizeof(Entry)) >> 20) +
            " MB for " + std::to_string(entries) + " entries";
    return nullptr;
  }
  t->free_.reserve(entries);
  for (uint64_t i = entries; i-- > 0;) t->free_.push_back(uint32_t(i));

  const std::string dq_name = name + "_dq";
  rte_rcu_qsbr_dq_parameters p{};
  p.name = dq_name.c_str();
  p.flags = RTE_RCU_QSBR_DQ_MT_UNSAFE;  // one writer
  p.size = uint32_t(entries);           // every entry may wait at once: enqueue never fails
  p.esize = sizeof(uint32_t);
  // Reclaim on enqueue once a few deletes wait, a bounded number at a time (as rte_hash).
  p.trigger_reclaim_limit = 32;
  p.max_reclaim_size = 64;
  p.free_fn = &ExactTable::reclaim;
  p.p = t.get();
  p.v = qsbr;
  t->defer_ = rte_rcu_qsbr_dq_create(&p);
  if (!t->defer_) {
    error = std::string("cannot create the RCU defer queue: ") + rte_strerror(rte_errno);
    return nullptr;
  }
  return t;
}

ExactTable::~ExactTable() {
  // Workers are stopped (offline) by now: everything waiting is past its grace period.
  if (defer_) rte_rcu_qsbr_dq_delete(defer_);
  rte_free(buckets_);
  rte_free(entries_);
}

void ExactTable::reclaim(void* table, void* elements, unsigned n) {
  auto* t = static_cast<ExactTable*>(table);
  const auto* idx = static_cast<const uint32_t*>(elements);
  for (unsigned i = 0; i < n; ++i) t->free_.push_back(idx[i]);
}

bool ExactTable::take_entry(uint32_t& index) {
  // Deleted entries come back once the workers passed a quiescent state; wait a bounded
  // moment for them (a burst takes microseconds) before calling the table full.
  for (int tries = 0; free_.empty() && tries < 2000; ++tries) {
    unsigned freed = 0, pending = 0, available = 0;
    rte_rcu_qsbr_dq_reclaim(defer_, UINT32_MAX, &freed, &pending, &available);
    if (free_.empty()) {
      if (pending == 0) return false;
      rte_delay_us_sleep(50);
    }
  }
  if (free_.empty()) return false;
  index = free_.back();
  free_.pop_back();
  return true;
}

bool ExactTable::locate(uint64_t head, const uint64_t* a, uint32_t hash, uint32_t& bucket,
                        unsigned& lane) const {
  uint32_t b = hash & bucket_mask_;
  const uint16_t sig = signature(hash);
  for (uint32_t probes = 0; probes <= bucket_mask_; ++probes) {
    const Bucket& bk = buckets_[b];
    for (uint32_t match = lanes_with(bk, sig); match != 0; match &= match - 1) {
      const unsigned l = unsigned(__builtin_ctz(match));
      const Entry& e = entries_[bk.entry[l]];
      if (e.head == head && e.addr[0] == a[0] && e.addr[1] == a[1]) {
        bucket = b;
        lane = l;
        return true;
      }
    }
    if (bk.overflow == 0) break;
    b = (b + 1) & bucket_mask_;
  }
  return false;
}

int64_t ExactTable::find(uint64_t head, const uint8_t* addr16, uint32_t& slot) const {
  uint64_t a[2];
  std::memcpy(a, addr16, 16);
  uint32_t b;
  unsigned lane;
  if (!locate(head, a, exact_table_hash(head, addr16), b, lane)) return -1;
  const uint32_t index = buckets_[b].entry[lane];
  slot = entries_[index].slot;
  return index;
}

bool ExactTable::upsert(uint64_t head, const uint8_t* addr16, uint32_t slot) {
  uint64_t a[2];
  std::memcpy(a, addr16, 16);
  const uint32_t hash = exact_table_hash(head, addr16);
  uint32_t b;
  unsigned lane;
  if (locate(head, a, hash, b, lane)) {
    __atomic_store_n(&entries_[buckets_[b].entry[lane]].slot, slot, __ATOMIC_RELAXED);
    return true;
  }
  uint32_t index;
  if (!take_entry(index)) return false;
  Entry& e = entries_[index];
  e.head = head;
  e.addr[0] = a[0];
  e.addr[1] = a[1];
  e.slot = slot;
  // The first free lane from the home bucket on (there is one: lanes outnumber entries).
  const uint32_t home = hash & bucket_mask_;
  for (b = home;; b = (b + 1) & bucket_mask_) {
    const Bucket& bk = buckets_[b];
    const auto free_lane = std::find(std::begin(bk.sig), std::end(bk.sig), uint16_t(0));
    if (free_lane != std::end(bk.sig)) {
      lane = unsigned(free_lane - std::begin(bk.sig));
      break;
    }
  }
  // Counts along the way first: a reader that sees the key must not stop short of it.
  for (uint32_t p = home; p != b; p = (p + 1) & bucket_mask_)
    __atomic_store_n(&buckets_[p].overflow, buckets_[p].overflow + 1, __ATOMIC_RELAXED);
  Bucket& bk = buckets_[b];
  __atomic_store_n(&bk.entry[lane], index, __ATOMIC_RELAXED);
  __atomic_store_n(&bk.sig[lane], signature(hash), __ATOMIC_RELEASE);
  ++size_;
  return true;
}

bool ExactTable::erase(uint64_t head, const uint8_t* addr16) {
  uint64_t a[2];
  std::memcpy(a, addr16, 16);
  const uint32_t hash = exact_table_hash(head, addr16);
  uint32_t b;
  unsigned lane;
  if (!locate(head, a, hash, b, lane)) return false;
  Bucket& bk = buckets_[b];
  uint32_t index = bk.entry[lane];
  __atomic_store_n(&bk.sig[lane], uint16_t(0), __ATOMIC_RELEASE);
  for (uint32_t p = hash & bucket_mask_; p != b; p = (p + 1) & bucket_mask_)
    __atomic_store_n(&buckets_[p].overflow, buckets_[p].overflow - 1, __ATOMIC_RELAXED);
  --size_;
  // Readers may still hold the index: it is reused after a grace period. The queue holds
  // every entry at once, so this cannot fail.
  rte_rcu_qsbr_dq_enqueue(defer_, &index);
  return true;
}

uint32_t ExactTable::displaced() const {
  uint32_t n = 0;
  for (uint32_t b = 0; b <= bucket_mask_; ++b) {
    const Bucket& bk = buckets_[b];
    for (unsigned lane = 0; lane < kLanes; ++lane) {
      if (bk.sig[lane] == 0) continue;
      const Entry& e = entries_[bk.entry[lane]];
      n += (exact_table_hash(e.head, reinterpret_cast<const uint8_t*>(e.addr)) & bucket_mask_) != b;
    }
  }
  return n;
}

}  // namespace srv6gw::policy
