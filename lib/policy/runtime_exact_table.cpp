// SPDX-License-Identifier: BSD-3-Clause
// The exact table (exact and dst-any rules) edited in place under lock-free readers: deletes
// then upserts, the undo of a partial edit, and the counts of entries by kind that set the
// view's exact-level flags. Both apply paths make their edits through here.
#include <algorithm>

#include "policy/runtime.hpp"
#include "policy/runtime_internal.hpp"

namespace srv6gw::policy {

namespace runtime_detail {

bool add_exact(ExactTable& t, const ExactKey& key, uint32_t slot) {
  return t.upsert(exact_key_head(key), key.addr, slot);
}
bool erase_exact(ExactTable& t, const ExactKey& key) {
  return t.erase(exact_key_head(key), key.addr);
}
int64_t find_exact(const ExactTable& t, const ExactKey& key, uint32_t& slot) {
  return t.find(exact_key_head(key), key.addr, slot);
}

namespace {
// Keys whose buckets are prefetched before the first of them is looked up.
constexpr size_t kWarmGroup = 32;

// Prefetches the buckets of keys [first, first + n) (key_of(i): the i-th key).
template <class KeyOf>
void warm_buckets(const ExactTable& t, size_t first, size_t n, KeyOf key_of) {
  for (size_t i = first; i < first + n; ++i) {
    const ExactKey& k = key_of(i);
    t.prefetch(exact_table_hash(exact_key_head(k), k.addr));
  }
}
}  // namespace

void lookup_slots(const ExactTable& t, std::span<const ExactKey> keys, std::span<uint32_t> slots) {
  for (size_t base = 0; base < keys.size(); base += kWarmGroup) {
    const size_t n = std::min(kWarmGroup, keys.size() - base);
    warm_buckets(t, base, n, [&](size_t i) -> const ExactKey& { return keys[i]; });
    for (size_t i = base; i < base + n; ++i) slots[i] = hash_lookup_slot(&t, keys[i]);
  }
}

}  // namespace runtime_detail

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
  // occupancy at max(old, new)), then inserts/updates. An update of an existing key's slot
  // is a single atomic store (and needs no free entry). Each group of operations first
  // prefetches its keys' buckets, so the edits after it find them in the cache instead of
  // each waiting for memory in turn.
  deleted = upserted = 0;
  auto deleted_key = [&](size_t i) -> const ExactKey& { return deletes[i].key; };
  auto upserted_key = [&](size_t i) -> const ExactKey& { return upserts[i].key; };
  while (deleted < deletes.size()) {
    const size_t end = std::min(deleted + kWarmGroup, deletes.size());
    warm_buckets(*exact_, deleted, end - deleted, deleted_key);
    for (; deleted < end; ++deleted) erase_exact(*exact_, deletes[deleted].key);
  }
  while (upserted < upserts.size()) {
    const size_t end = std::min(upserted + kWarmGroup, upserts.size());
    warm_buckets(*exact_, upserted, end - upserted, upserted_key);
    for (; upserted < end; ++upserted) {
      const ExactOp& e = upserts[upserted];
      if (!add_exact(*exact_, e.key, e.new_slot))
        return error_at(kSteeringPath, "exact steering table insert failed: no free entry (" +
                                           std::to_string(exact_->size()) + " keys installed)");
    }
  }
  return std::nullopt;
}

void Runtime::undo_exact(const std::vector<ExactOp>& deletes, const std::vector<ExactOp>& upserts,
                         size_t deleted, size_t upserted) {
  // Reverse order; updates back to the old slot need no entry, and every re-insert restores
  // an entry that fitted before.
  while (upserted-- > 0) {
    const ExactOp& e = upserts[upserted];
    if (e.old_slot == kNoSlot)
      erase_exact(*exact_, e.key);
    else
      add_exact(*exact_, e.key, e.old_slot);
  }
  while (deleted-- > 0) add_exact(*exact_, deletes[deleted].key, deletes[deleted].old_slot);
}

}  // namespace srv6gw::policy
