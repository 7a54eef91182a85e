// SPDX-License-Identifier: BSD-3-Clause
#include "policy/steering.hpp"

#include <algorithm>
#include <map>
#include <new>
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

void steer_bulk(const SteeringView& v, const net::PacketInfo* const* infos, unsigned n,
                uint32_t* slots) {
  // Positions (into infos/slots) still unresolved after the levels looked up so far.
  uint8_t pending[kSteerBulkMax];
  unsigned n_pending = 0;
  // The hash levels this view has, in precedence order: (destination, DestQP, DSCP),
  // (destination, DestQP), (destination, any QP, DSCP), (destination, any QP). The keys are
  // built for the first of them directly (with only destination rules, building the exact
  // level's key and signature first and rewriting both was ~15 instructions a packet).
  struct HashLevel {
    bool any_qp;
    bool with_dscp;
  };
  HashLevel levels[4];
  unsigned n_levels = 0;
  if (v.has_exact) {
    if (v.exact_dscp) levels[n_levels++] = {false, true};
    levels[n_levels++] = {false, false};
  }
  if (v.has_dst_any) {
    if (v.dst_any_dscp) levels[n_levels++] = {true, true};
    levels[n_levels++] = {true, false};
  }
  if (n_levels != 0) {
    const ExactTable& table = *v.exact;
    // Per packet: the key's head word for the level being looked up and its hash. The
    // address is read in place from the PacketInfo.
    uint64_t heads[kSteerBulkMax];
    uint32_t hashes[kSteerBulkMax];
    // Sets head and hash of packet i for level lv and prefetches its bucket: the lookups of
    // the pass after it then find the buckets in the cache.
    auto target = [&](unsigned i, const HashLevel& lv) {
      const net::PacketInfo& info = *infos[i];
      const uint64_t head = exact_key_head(info.dst.family, lv.any_qp ? kAnyQp : info.bth.dest_qp,
                                           lv.with_dscp ? info.dscp : kAnyDscp);
      heads[i] = head;
      hashes[i] = exact_table_hash(head, info.dst.bytes.data());
      table.prefetch(hashes[i]);
    };
    // One pass over the pending packets: hits are resolved, misses stay pending in order.
    auto lookup_pending = [&] {
      unsigned kept = 0;
      for (unsigned j = 0; j < n_pending; ++j) {
        const unsigned i = pending[j];
        const uint32_t s = table.lookup(heads[i], infos[i]->dst.bytes.data(), hashes[i]);
        if (s != kNoSlot)
          slots[i] = s;
        else
          pending[kept++] = uint8_t(i);
      }
      n_pending = kept;
    };
    // The first level over every packet: a miss starts the pending list.
    for (unsigned i = 0; i < n; ++i) target(i, levels[0]);
    for (unsigned i = 0; i < n; ++i) {
      const uint32_t s = table.lookup(heads[i], infos[i]->dst.bytes.data(), hashes[i]);
      slots[i] = s;
      if (s == kNoSlot) pending[n_pending++] = uint8_t(i);
    }
    for (unsigned l = 1; l < n_levels && n_pending != 0; ++l) {
      for (unsigned j = 0; j < n_pending; ++j) target(pending[j], levels[l]);
      lookup_pending();
    }
  } else {
    for (unsigned i = 0; i < n; ++i) pending[n_pending++] = uint8_t(i);
  }
  for (unsigned j = 0; j < n_pending; ++j)
    slots[pending[j]] = steer_after_hash(v, *infos[pending[j]]);
}

}  // namespace srv6gw::policy
