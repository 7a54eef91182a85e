// SPDX-License-Identifier: BSD-3-Clause
// Helpers shared by the files that implement policy::Runtime (runtime*.cpp): error paths,
// ExactKey comparison and the exact table's key-level operations. Internal to lib/policy; not
// installed and not included by anything outside it.
#pragma once

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

// ExactTable::upsert/erase/find of an ExactKey (runtime_exact_table.cpp).
bool add_exact(ExactTable& t, const ExactKey& key, uint32_t slot);
bool erase_exact(ExactTable& t, const ExactKey& key);
int64_t find_exact(const ExactTable& t, const ExactKey& key, uint32_t& slot);

// The slot each key maps to (kNoSlot if absent), every key's bucket prefetched a group of
// keys ahead, so their cache misses overlap instead of following each other (at 1M rules
// the table is far larger than the cache and each lone lookup waits for memory twice).
void lookup_slots(const ExactTable& t, std::span<const ExactKey> keys, std::span<uint32_t> slots);

}  // namespace srv6gw::policy::runtime_detail
