// SPDX-License-Identifier: BSD-3-Clause
// The exact rte_hash (exact and dst-any rules) edited in place under lock-free readers:
// deletes then upserts, the undo of a partial edit, and the counts of entries by kind that
// set the view's exact-level flags. Both apply paths make their edits through here.
#include <rte_cycles.h>
#include <rte_errno.h>

#include <algorithm>

#include "policy/runtime.hpp"
#include "policy/runtime_internal.hpp"

namespace srv6gw::policy {

namespace runtime_detail {

namespace {
void* slot_data(uint32_t slot) {
  return reinterpret_cast<void*>(uintptr_t(slot));
}
}  // namespace

// rte_hash_add_key_data, waiting a bounded moment for free key slots: those of deleted
// entries come back once the workers passed a quiescent state (the hash reclaims its defer
// queue on each attempt).
int add_exact(rte_hash* h, const ExactKey& key, uint32_t slot) {
  int rc = rte_hash_add_key_data(h, &key, slot_data(slot));
  for (int tries = 0; rc == -ENOSPC && tries < 2000; ++tries) {
    rte_delay_us_sleep(50);
    rc = rte_hash_add_key_data(h, &key, slot_data(slot));
  }
  return rc;
}

void lookup_slots(const rte_hash* h, std::span<const ExactKey> keys, std::span<uint32_t> slots) {
  const void* bulk_keys[RTE_HASH_LOOKUP_BULK_MAX];
  void* data[RTE_HASH_LOOKUP_BULK_MAX];
  for (size_t base = 0; base < keys.size(); base += RTE_HASH_LOOKUP_BULK_MAX) {
    const size_t n = std::min<size_t>(RTE_HASH_LOOKUP_BULK_MAX, keys.size() - base);
    for (size_t i = 0; i < n; ++i) bulk_keys[i] = &keys[base + i];
    uint64_t hits = 0;
    rte_hash_lookup_bulk_data(h, bulk_keys, uint32_t(n), &hits, data);
    for (size_t i = 0; i < n; ++i)
      slots[base + i] = hits >> i & 1 ? uint32_t(reinterpret_cast<uintptr_t>(data[i])) : kNoSlot;
  }
}

}  // namespace runtime_detail

namespace {

// A bulk lookup of the keys of n operations (at most RTE_HASH_LOOKUP_BULK_MAX), for its
// prefetches only: the results are not needed.
template <class Op>  // Runtime::ExactOp
void warm_buckets(const rte_hash* h, const Op* ops, size_t n) {
  const void* keys[RTE_HASH_LOOKUP_BULK_MAX];
  void* data[RTE_HASH_LOOKUP_BULK_MAX];
  for (size_t i = 0; i < n; ++i) keys[i] = &ops[i].key;
  uint64_t hits = 0;
  rte_hash_lookup_bulk_data(h, keys, uint32_t(n), &hits, data);
}

}  // namespace

using namespace runtime_detail;

void Runtime::ExactCounts::add(const config::SteeringRule& r, int sign) {
  const uint32_t d = uint32_t(sign);  // -1 wraps: unsigned arithmetic modulo 2^32
  if (r.kind == config::SteeringKind::exact) {
    exact += d;
    if (r.dscp) exact_dscp += d;
  } else if (r.kind == config::SteeringKind::dst_any_qp) {
    dst_any += d;
    if (r.dscp) dst_any_dscp += d;
  }
}

std::optional<config::ConfigError> Runtime::update_exact(const std::vector<ExactOp>& deletes,
                                                         const std::vector<ExactOp>& upserts,
                                                         size_t& deleted, size_t& upserted) {
  // Deletes first (those matches are gone in the new configuration, and it keeps the peak
  // occupancy at max(old, new)), then inserts/updates. An update of an existing key's data
  // is a single atomic store in the lock-free rte_hash (and needs no free key slot).
  // Each run of RTE_HASH_LOOKUP_BULK_MAX operations first brings its keys' buckets into the
  // cache with one bulk lookup (warm_buckets): the deletes and inserts after it then find
  // them there instead of each waiting for memory in turn.
  deleted = upserted = 0;
  while (deleted < deletes.size()) {
    const size_t end = std::min<size_t>(deleted + RTE_HASH_LOOKUP_BULK_MAX, deletes.size());
    warm_buckets(exact_, &deletes[deleted], end - deleted);
    for (; deleted < end; ++deleted) rte_hash_del_key(exact_, &deletes[deleted].key);
  }
  while (upserted < upserts.size()) {
    const size_t end = std::min<size_t>(upserted + RTE_HASH_LOOKUP_BULK_MAX, upserts.size());
    warm_buckets(exact_, &upserts[upserted], end - upserted);
    for (; upserted < end; ++upserted) {
      const ExactOp& e = upserts[upserted];
      if (const int rc = add_exact(exact_, e.key, e.new_slot); rc < 0)
        return error_at(kSteeringPath,
                        std::string("exact steering table insert failed: ") + rte_strerror(-rc));
    }
  }
  return std::nullopt;
}

void Runtime::undo_exact(const std::vector<ExactOp>& deletes, const std::vector<ExactOp>& upserts,
                         size_t deleted, size_t upserted) {
  // Reverse order; updates back to the old data need no key slot, and every re-insert
  // restores an entry that fitted before.
  while (upserted-- > 0) {
    const ExactOp& e = upserts[upserted];
    if (e.old_slot == kNoSlot)
      rte_hash_del_key(exact_, &e.key);
    else
      add_exact(exact_, e.key, e.old_slot);
  }
  while (deleted-- > 0) add_exact(exact_, deletes[deleted].key, deletes[deleted].old_slot);
}

}  // namespace srv6gw::policy
