// SPDX-License-Identifier: BSD-3-Clause
#include "policy/steering.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace srv6gw::policy {

namespace {

uint64_t load_be64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}

// Mask of the first `bits` bits of a 64-bit big-endian half.
uint64_t half_mask(int bits) {
  if (bits <= 0) return 0;
  if (bits >= 64) return ~uint64_t(0);
  return ~uint64_t(0) << (64 - bits);
}

}  // namespace

QpRangeTable::QpRangeTable(const std::vector<Rule>& rules) {
  // Group the rules (keeping configuration order inside a group for the tie-break).
  std::map<GroupKey, std::vector<const Rule*>> grouped;
  for (const Rule& r : rules) {
    grouped[key(r.has_dst, r.dst, r.dscp)].push_back(&r);
    has_dst_groups_ |= r.has_dst;
    has_dscp_groups_ |= r.dscp != kAnyDscp;
  }
  for (const auto& [gkey, members] : grouped) {
    Group g;
    g.key = gkey;
    g.first = uint32_t(intervals_.size());
    // Elementary intervals: between consecutive range boundaries the covering set is fixed.
    std::vector<uint64_t> points;
    points.reserve(members.size() * 2);
    for (const Rule* r : members) {
      points.push_back(r->qp_low);
      points.push_back(uint64_t(r->qp_high) + 1);
    }
    std::sort(points.begin(), points.end());
    points.erase(std::unique(points.begin(), points.end()), points.end());
    for (size_t i = 0; i + 1 < points.size(); ++i) {
      const uint64_t lo = points[i], hi = points[i + 1] - 1;
      const Rule* best = nullptr;
      for (const Rule* r : members) {
        if (r->qp_low > lo || r->qp_high < hi) continue;
        if (!best || uint64_t(r->qp_high - r->qp_low) < uint64_t(best->qp_high - best->qp_low))
          best = r;
      }
      if (!best) continue;
      // Merge with the previous interval when contiguous and steering to the same slot.
      if (intervals_.size() > g.first && intervals_.back().slot == best->slot &&
          uint64_t(intervals_.back().high) + 1 == lo) {
        intervals_.back().high = uint32_t(hi);
      } else {
        intervals_.push_back({uint32_t(lo), uint32_t(hi), best->slot});
      }
    }
    g.count = uint32_t(intervals_.size()) - g.first;
    groups_.push_back(g);  // std::map iterates in key order: groups_ is sorted
  }
}

uint32_t QpRangeTable::lookup_group(const GroupKey& k, uint32_t qp) const {
  auto git = std::lower_bound(groups_.begin(), groups_.end(), k,
                              [](const Group& g, const GroupKey& x) { return g.key < x; });
  if (git == groups_.end() || !(git->key == k)) return kNoSlot;
  const Interval* first = intervals_.data() + git->first;
  const Interval* last = first + git->count;
  // First interval whose high >= qp.
  const Interval* it =
      std::lower_bound(first, last, qp, [](const Interval& iv, uint32_t q) { return iv.high < q; });
  if (it == last || it->low > qp) return kNoSlot;
  return it->slot;
}

PrefixTable::PrefixTable(const std::vector<Rule>& rules) {
  std::map<int, std::vector<Entry>, std::greater<int>> by_length;
  for (const Rule& r : rules) {
    const uint64_t mhi = half_mask(r.length), mlo = half_mask(int(r.length) - 64);
    Entry e;
    e.hi = load_be64(r.addr.data()) & mhi;
    e.lo = load_be64(r.addr.data() + 8) & mlo;
    e.dscp = r.dscp;
    e.slot = r.slot;
    by_length[r.length].push_back(e);
  }
  for (auto& [length, entries] : by_length) {
    // Keep the first rule of duplicates (validate() refuses them; this is only a guard).
    std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      return std::tie(a.hi, a.lo, a.dscp) < std::tie(b.hi, b.lo, b.dscp);
    });
    entries.erase(std::unique(entries.begin(), entries.end(),
                              [](const Entry& a, const Entry& b) {
                                return a.hi == b.hi && a.lo == b.lo && a.dscp == b.dscp;
                              }),
                  entries.end());
    Level lv;
    lv.mask_hi = half_mask(length);
    lv.mask_lo = half_mask(length - 64);
    lv.first = uint32_t(entries_.size());
    lv.count = uint32_t(entries.size());
    entries_.insert(entries_.end(), entries.begin(), entries.end());
    levels_.push_back(lv);
  }
}

uint32_t PrefixTable::lookup(const uint8_t* addr16, uint8_t dscp) const {
  const uint64_t hi = load_be64(addr16), lo = load_be64(addr16 + 8);
  for (const Level& lv : levels_) {
    const uint64_t khi = hi & lv.mask_hi, klo = lo & lv.mask_lo;
    const Entry* first = entries_.data() + lv.first;
    const Entry* last = first + lv.count;
    const Entry* it = std::lower_bound(first, last, 0, [&](const Entry& e, int) {
      if (e.hi != khi) return e.hi < khi;
      if (e.lo != klo) return e.lo < klo;
      return e.dscp < dscp;
    });
    if (it != last && it->hi == khi && it->lo == klo && it->dscp == dscp) return it->slot;
  }
  return kNoSlot;
}

}  // namespace srv6gw::policy
