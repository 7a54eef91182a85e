// SPDX-License-Identifier: BSD-3-Clause
// Helpers shared by the files that implement policy::Runtime (runtime*.cpp): error paths,
// ExactKey comparison and the bounded rte_hash insert. Internal to lib/policy; not installed
// and not included by anything outside it.
#pragma once

#include <rte_hash.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "config/model.hpp"
#include "policy/steering.hpp"

namespace srv6gw::policy::runtime_detail {

inline constexpr const char* kCapacitiesPath = "/srv6gw:gateway/capacities";
inline constexpr const char* kSteeringPath = "/srv6gw:gateway/steering";

inline config::ConfigError error_at(std::string path, std::string message) {
  return {std::move(path), std::move(message)};
}
inline bool key_less(const ExactKey& a, const ExactKey& b) {
  return std::memcmp(&a, &b, sizeof(ExactKey)) < 0;
}
inline bool key_equal(const ExactKey& a, const ExactKey& b) {
  return std::memcmp(&a, &b, sizeof(ExactKey)) == 0;
}

// rte_hash_add_key_data, waiting a bounded moment for free key slots (runtime_exact_table.cpp).
int add_exact(rte_hash* h, const ExactKey& key, uint32_t slot);

// The slot each key maps to (kNoSlot if absent), looked up RTE_HASH_LOOKUP_BULK_MAX keys at a
// time: rte_hash prefetches the buckets of every key of a bulk before comparing, so their
// cache misses overlap instead of following each other (at 1M rules the table is far larger
// than the cache and each lone lookup waits for memory twice).
void lookup_slots(const rte_hash* h, std::span<const ExactKey> keys, std::span<uint32_t> slots);

}  // namespace srv6gw::policy::runtime_detail
