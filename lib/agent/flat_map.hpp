// SPDX-License-Identifier: BSD-3-Clause
// An open-addressing hash map for the agent's per-rule indexes (rule id -> position, steering
// match -> rule id, which change wrote a rule). std::unordered_map allocates one heap node per
// entry: for a 100k-rule batch that is 100k allocations per map, each a cache miss to insert,
// find and free. Here entries live in one array of slots (linear probing, power-of-two size,
// at most 3/4 full, deletion by backward shift so that no tombstones accumulate): one
// allocation per growth (in huge pages once it is large: huge_pages.hpp), neighbouring probes
// on one cache line.
//
// Not a general container: keys and values are small and trivially copyable enough to be
// moved around on erase and growth; no iterator stability (any insertion or erase may move
// entries). Threads: none of its own; the owner serialises access.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "agent/huge_pages.hpp"

namespace srv6gw::agent {

template <class Key, class Value, class Hash = std::hash<Key>>
class FlatMap {
 public:
  FlatMap() = default;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Room for `n` entries without growing.
  void reserve(size_t n) {
    if (n * 4 > capacity() * 3) rehash(slots_for(n));
  }

  void clear() {
    slots_.clear();
    size_ = 0;
    mask_ = 0;
  }

  Value* find(const Key& key) {
    const size_t i = locate(key);
    return i == npos ? nullptr : &slots_[i].second;
  }
  const Value* find(const Key& key) const {
    const size_t i = locate(key);
    return i == npos ? nullptr : &slots_[i].second;
  }
  bool contains(const Key& key) const { return locate(key) != npos; }
  size_t count(const Key& key) const { return contains(key) ? 1 : 0; }

  const Value& at(const Key& key) const {
    const Value* v = find(key);
    if (!v) throw std::out_of_range("FlatMap::at: no such key");
    return *v;
  }

  // Inserts key -> value unless the key is present; returns the entry and whether it is new.
  std::pair<Value*, bool> try_emplace(const Key& key, Value value) {
    if ((size_ + 1) * 4 > capacity() * 3) rehash(slots_for(size_ + 1));
    size_t i = home(key);
    while (slots_[i].used) {
      if (slots_[i].first == key) return {&slots_[i].second, false};
      i = (i + 1) & mask_;
    }
    slots_[i].used = true;
    slots_[i].first = key;
    slots_[i].second = std::move(value);
    ++size_;
    return {&slots_[i].second, true};
  }

  Value& operator[](const Key& key) { return *try_emplace(key, Value{}).first; }

  // Removes `key`; false when absent. Later entries of the probe run move back into the hole.
  bool erase(const Key& key) {
    size_t hole = locate(key);
    if (hole == npos) return false;
    size_t j = hole;
    while (true) {
      j = (j + 1) & mask_;
      if (!slots_[j].used) break;
      const size_t k = home(slots_[j].first);
      // Move slot j into the hole unless its home lies cyclically in (hole, j].
      const bool home_between = hole <= j ? (hole < k && k <= j) : (hole < k || k <= j);
      if (!home_between) {
        slots_[hole].first = std::move(slots_[j].first);
        slots_[hole].second = std::move(slots_[j].second);
        hole = j;
      }
    }
    slots_[hole].used = false;
    --size_;
    return true;
  }

  // Calls f(key, value) for every entry, in slot order.
  template <class F>
  void for_each(F&& f) const {
    for (size_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].used) f(slots_[i].first, slots_[i].second);
  }

  // Same entries, whatever the layout (insertion histories differ between equal maps).
  friend bool operator==(const FlatMap& a, const FlatMap& b) {
    if (a.size_ != b.size_) return false;
    for (size_t i = 0; i < a.slots_.size(); ++i) {
      if (!a.slots_[i].used) continue;
      const Value* v = b.find(a.slots_[i].first);
      if (!v || !(*v == a.slots_[i].second)) return false;
    }
    return true;
  }

 private:
  static constexpr size_t npos = SIZE_MAX;

  size_t capacity() const { return slots_.size(); }

  static size_t slots_for(size_t n) {
    size_t c = 16;
    while (c * 3 < n * 4) c *= 2;
    return c;
  }

  // Fibonacci hashing on top of Hash: std::hash of an integer is the identity, and ids that
  // share low bits would otherwise share a probe run.
  size_t home(const Key& key) const {
    const uint64_t h = uint64_t(Hash{}(key)) * 0x9E3779B97F4A7C15ull;
    return size_t(h >> 32 ^ h) & mask_;
  }

  size_t locate(const Key& key) const {
    if (size_ == 0) return npos;
    size_t i = home(key);
    while (slots_[i].used) {
      if (slots_[i].first == key) return i;
      i = (i + 1) & mask_;
    }
    return npos;
  }

  void rehash(size_t new_capacity) {
    std::vector<Slot, HugePageAllocator<Slot>> old_slots(new_capacity);
    old_slots.swap(slots_);
    mask_ = new_capacity - 1;
    for (size_t i = 0; i < old_slots.size(); ++i) {
      if (!old_slots[i].used) continue;
      size_t j = home(old_slots[i].first);
      while (slots_[j].used) j = (j + 1) & mask_;
      slots_[j] = std::move(old_slots[i]);
    }
  }

  // The occupancy flag sits in the slot: a probe reads one cache line, not two.
  struct Slot {
    Key first{};
    Value second{};
    bool used = false;
  };
  std::vector<Slot, HugePageAllocator<Slot>> slots_;  // megabytes for 100k entries
  size_t size_ = 0;
  size_t mask_ = 0;
};

}  // namespace srv6gw::agent
