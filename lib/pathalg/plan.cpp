// SPDX-License-Identifier: BSD-3-Clause
// Plan pieces with no building in them: id books, capacity weights, pins from a placement and
// the diff between two plans. Building is in plan_builder.cpp, the Planner in planner.cpp.
#include "pathalg/plan.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace srv6gw::pathalg {

// ---- IdBook --------------------------------------------------------------------------------

std::optional<uint32_t> IdBook::id(std::string_view key) {
  if (auto it = by_key_.find(key); it != by_key_.end()) return it->second;
  while (next_ <= last_ && used_.count(next_)) {
    if (next_ == last_) return std::nullopt;
    ++next_;
  }
  if (next_ > last_ || next_ < first_) return std::nullopt;
  const uint32_t id = next_;
  used_.insert(id);
  by_key_.emplace(std::string(key), id);
  if (next_ < last_) ++next_;
  return id;
}

std::optional<uint32_t> IdBook::find(std::string_view key) const {
  if (auto it = by_key_.find(key); it != by_key_.end()) return it->second;
  return std::nullopt;
}

void IdBook::release(std::string_view key) {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return;
  used_.erase(it->second);
  if (it->second >= first_) next_ = std::min(next_, it->second);
  by_key_.erase(it);
}

void IdBook::set_first(uint32_t first) {
  first_ = first;
  next_ = std::max(next_, first);
}

namespace {

uint64_t gcd64(uint64_t a, uint64_t b) {
  return std::gcd(a, b);
}

}  // namespace

std::vector<uint32_t> capacity_weights(const Topology& t, const PathList& paths) {
  std::vector<uint32_t> w(paths.size(), 0);
  if (paths.empty()) return w;
  // Links crossed by every path do not tell paths apart: leave them out of the bottleneck.
  std::vector<DirLinkId> all;
  for (size_t i = 0; i < paths.size(); ++i) {
    for (DirLinkId d : paths.links(i)) all.push_back(d);
  }
  std::sort(all.begin(), all.end());
  auto crossings = [&](DirLinkId d) {
    const auto r = std::equal_range(all.begin(), all.end(), d);
    return size_t(r.second - r.first);
  };
  std::vector<uint64_t> b(paths.size(), 0);
  uint64_t g = 0;
  for (size_t i = 0; i < paths.size(); ++i) {
    const auto links = paths.links(i);
    if (!usable(t, links)) continue;
    uint64_t m = UINT64_MAX;
    for (DirLinkId d : links) {
      if (crossings(d) == paths.size()) continue;
      m = std::min(m, t.capacity_mbps(d));
    }
    if (m == UINT64_MAX) m = 1;  // every link shared (one path): any equal weight
    b[i] = m;
    g = gcd64(g, m);
  }
  if (g == 0) return w;
  uint64_t top = 0;
  for (uint64_t x : b) top = std::max(top, x / g);
  // Keep within the gateway's weight limit, scaling down (rounding, never to 0) if needed.
  const double scale = top > config::kMaxWeight ? double(config::kMaxWeight) / double(top) : 1.0;
  for (size_t i = 0; i < paths.size(); ++i) {
    if (!b[i]) continue;
    w[i] = uint32_t(std::max<double>(1.0, double(b[i] / g) * scale + 0.5));
  }
  return w;
}

std::vector<Pin> pins_from(const PathCache& cache, std::span<const Flow> flows,
                           const Placement& placement) {
  std::vector<Pin> pins;
  PathList paths;
  for (size_t f = 0; f < flows.size() && f < placement.path_of.size(); ++f) {
    if (placement.path_of[f] == kNoPath) continue;
    paths.clear();
    cache.append_between(flows[f].src, flows[f].dst, paths);
    if (placement.path_of[f] >= paths.size()) continue;
    const auto n = paths.nodes(placement.path_of[f]);
    pins.push_back(Pin{flows[f].src, flows[f].dst, flows[f].dest_qp, {n.begin(), n.end()}});
  }
  return pins;
}

// ---- diff ----------------------------------------------------------------------------------

namespace {

// Objects of `to` that `from` lacks or holds otherwise go to `upserts`, the keys of objects
// of `from` that `to` lacks to `deletes`; both in the vectors' order. Map and Set index the
// keys (hashed where the key has a hash).
template <template <class...> class Map, template <class...> class Set, typename T, typename KeyOf,
          typename Deleted>
void diff_by_key(const std::vector<T>& from, const std::vector<T>& to, KeyOf key_of,
                 std::vector<T>& upserts, std::vector<Deleted>& deletes) {
  using Key = std::decay_t<decltype(key_of(std::declval<const T&>()))>;
  Map<Key, const T*> old;
  for (const auto& x : from) old.emplace(key_of(x), &x);
  Set<Key> now;
  for (const auto& x : to) {
    now.insert(key_of(x));
    auto it = old.find(key_of(x));
    if (it == old.end() || !(*it->second == x)) upserts.push_back(x);
  }
  for (const auto& x : from) {
    if (!now.count(key_of(x))) deletes.push_back(Deleted(key_of(x)));
  }
}

}  // namespace

PlanDiff diff(const GatewayPlan& from, const GatewayPlan& to) {
  PlanDiff d;
  diff_by_key<std::unordered_map, std::unordered_set>(
      from.policies, to.policies, [](const config::Policy& p) { return std::string_view(p.name); },
      d.upsert_policies, d.delete_policies);
  diff_by_key<std::unordered_map, std::unordered_set>(
      from.steering, to.steering, [](const config::SteeringRule& r) { return r.id; },
      d.upsert_rules, d.delete_rules);
  diff_by_key<std::map, std::set>(
      from.local_sids, to.local_sids, [](const config::LocalSid& l) { return l.sid; },
      d.upsert_local_sids, d.delete_local_sids);
  return d;
}

PlanDiff full(const GatewayPlan& plan) {
  return diff(GatewayPlan{}, plan);
}

}  // namespace srv6gw::pathalg
