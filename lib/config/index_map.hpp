// SPDX-License-Identifier: BSD-3-Clause
// The hash map of the per-rule indexes (steering match -> rule id here, and the agent's rule
// id -> position and which change wrote a rule): abseil's flat_hash_map (SwissTable: one array of
// slots and control bytes, no node per entry) over the huge-page allocator, since for 100k-1M rules
// the arrays are megabytes (huge_pages.hpp). Measured against the hand-written open-addressing map
// it replaces: docs/design/performance.md, "Agent index map".
#pragma once

#include <absl/container/flat_hash_map.h>
#include <absl/hash/hash.h>

#include <functional>
#include <utility>

#include "config/huge_pages.hpp"

namespace srv6gw::config {

template <class Key, class Value, class Hash = absl::Hash<Key>>
using IndexMap = absl::flat_hash_map<Key, Value, Hash, std::equal_to<Key>,
                                     HugePageAllocator<std::pair<const Key, Value>>>;

// The value stored under `key`, or null.
template <class Map, class Key>
auto* find_value(Map& map, const Key& key) {
  auto it = map.find(key);
  return it == map.end() ? nullptr : &it->second;
}

}  // namespace srv6gw::config
