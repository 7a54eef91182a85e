// SPDX-License-Identifier: BSD-3-Clause
#include "policy/compiled_policy.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <mutex>
#include <numeric>
#include <unordered_map>

namespace srv6gw::policy {

namespace {

// Versions are unique per compiled object; lineages per configuration compile. Both only
// grow, and only the control thread creates policies, but atomics keep tests with several
// gateways honest.
std::atomic<uint64_t> g_next_version{1};
std::atomic<uint32_t> g_next_lineage{1};

uint32_t next_lineage() {
  uint32_t l = g_next_lineage.fetch_add(1, std::memory_order_relaxed);
  if ((l & 0xFFFFFFu) == 0) l = g_next_lineage.fetch_add(1, std::memory_order_relaxed);
  return l;
}

// Fills the active set, the SWRR weights and the bucket table from the paths' effective
// weights. Active set: usable primaries, or usable backups when no primary is usable.
// `previous` (a factor-only rebuild: same lists, new weights) is the bucket table in force:
// buckets whose list keeps its share stay where they are, so a weight change moves only
// the flows it must (from lists that shrink to lists that grow). Without it a change would
// re-deal the whole table and move flows between lists whose weights did not change, which
// reorders RoCE traffic and confuses the engine's attribution.
void compute_selection(CompiledPolicy& cp,
                       const std::array<uint8_t, kBuckets>* previous = nullptr) {
  cp.active_count = 0;
  cp.active_mask = 0;
  for (int pass = 0; pass < 2 && cp.active_count == 0; ++pass) {
    const bool want_backup = pass == 1;
    for (size_t i = 0; i < cp.paths.size(); ++i) {
      const CompiledPath& path = cp.paths[i];
      if (path.backup != want_backup || path.effective_weight == 0) continue;
      cp.active[cp.active_count++] = uint8_t(i);
      cp.active_mask |= uint64_t(1) << i;
    }
  }
  cp.swrr_total = 0;
  cp.buckets.fill(kNoPath);
  if (cp.active_count == 0) return;

  // SWRR is invariant to a common scale, so divide by the gcd (weights 3:1 with factor 1.0
  // become exactly 3:1 again) and, if the sum still does not fit the 32-bit cursors, scale
  // down (keeping every member at >= 1).
  uint64_t g = 0;
  for (unsigned i = 0; i < cp.active_count; ++i)
    g = std::gcd(g, cp.paths[cp.active[i]].effective_weight);
  std::array<uint64_t, kMaxPaths> w{};
  uint64_t total = 0;
  for (unsigned i = 0; i < cp.active_count; ++i) {
    w[i] = cp.paths[cp.active[i]].effective_weight / g;
    total += w[i];
  }
  constexpr uint64_t kLimit = uint64_t(1) << 30;
  if (total > kLimit) {
    const double scale = double(kLimit) / double(total);
    total = 0;
    for (unsigned i = 0; i < cp.active_count; ++i) {
      w[i] = std::max<uint64_t>(1, uint64_t(double(w[i]) * scale));
      total += w[i];
    }
  }
  for (unsigned i = 0; i < cp.active_count; ++i) cp.swrr_weight[i] = int32_t(w[i]);
  cp.swrr_total = int32_t(total);

  // Bucket table: largest-remainder apportionment of kBuckets, every active member gets at
  // least one bucket (a usable list must carry some flows), then the buckets are dealt out
  // by SWRR over the bucket counts so that each list's buckets are spread over the table.
  std::array<uint32_t, kMaxPaths> count{};
  std::array<double, kMaxPaths> remainder{};
  uint32_t assigned = 0;
  for (unsigned i = 0; i < cp.active_count; ++i) {
    const double exact = double(kBuckets) * double(w[i]) / double(total);
    count[i] = std::max<uint32_t>(1, uint32_t(exact));
    remainder[i] = exact - std::floor(exact);
    assigned += count[i];
  }
  while (assigned < kBuckets) {
    unsigned best = 0;
    for (unsigned i = 1; i < cp.active_count; ++i)
      if (remainder[i] > remainder[best]) best = i;
    ++count[best];
    remainder[best] -= 1.0;
    ++assigned;
  }
  while (assigned > kBuckets) {  // only when the minimum of one bucket overshot
    unsigned best = 0;
    for (unsigned i = 1; i < cp.active_count; ++i)
      if (count[i] > count[best]) best = i;
    --count[best];
    --assigned;
  }
  std::array<int64_t, kMaxPaths> current{};
  for (unsigned b = 0; b < kBuckets; ++b) {
    unsigned best = 0;
    int64_t best_value = INT64_MIN;
    for (unsigned i = 0; i < cp.active_count; ++i) {
      current[i] += count[i];
      if (current[i] > best_value) {
        best_value = current[i];
        best = i;
      }
    }
    current[best] -= kBuckets;
    cp.buckets[b] = cp.active[best];
  }
  if (!previous) return;

  // A factor-only rebuild moves only the flows it must (each list keeps min(old, new count)
  // of its buckets), and among the choices it prefers the fresh table just dealt: a list
  // keeps the buckets the fresh table gives it, and gets back those first. So a list that
  // taken out and put back takes back exactly the flows it had (traffic returns to the
  // restored path). After longer sequences minimal movement wins over the fresh table.
  const std::array<uint8_t, kBuckets> fresh_table = cp.buckets;
  std::array<int, kMaxPaths> position;  // path index -> active position, -1 = inactive
  position.fill(-1);
  for (unsigned i = 0; i < cp.active_count; ++i) position[cp.active[i]] = int(i);
  std::array<uint32_t, kMaxPaths> kept{};
  std::array<bool, kBuckets> decided{};
  for (int pass = 0; pass < 2; ++pass) {
    for (unsigned b = 0; b < kBuckets; ++b) {
      if (decided[b]) continue;
      const uint8_t path = (*previous)[b];
      const int pos = path < kMaxPaths ? position[path] : -1;
      if (pos < 0 || kept[unsigned(pos)] >= count[unsigned(pos)]) continue;
      if (pass == 0 && fresh_table[b] != path) continue;
      ++kept[unsigned(pos)];
      cp.buckets[b] = path;
      decided[b] = true;
    }
  }
  std::array<int64_t, kMaxPaths> deficit{};
  for (unsigned i = 0; i < cp.active_count; ++i) deficit[i] = int64_t(count[i] - kept[i]);
  // Freed buckets: to the list the fresh table names while it is short, ...
  std::array<uint16_t, kBuckets> free_buckets;
  unsigned n_free = 0;
  for (unsigned b = 0; b < kBuckets; ++b) {
    if (decided[b]) continue;
    const int pos = position[fresh_table[b]];
    if (pos >= 0 && deficit[unsigned(pos)] > 0) {
      --deficit[unsigned(pos)];
      cp.buckets[b] = fresh_table[b];
    } else {
      free_buckets[n_free++] = uint16_t(b);
    }
  }
  // ... the rest dealt by SWRR over the remaining shortfalls, spread over the table.
  std::array<int64_t, kMaxPaths> current_short{};
  for (unsigned k = 0; k < n_free; ++k) {
    unsigned best = 0;
    int64_t best_value = INT64_MIN;
    for (unsigned i = 0; i < cp.active_count; ++i) {
      if (deficit[i] == 0) continue;
      current_short[i] += deficit[i];
      if (current_short[i] > best_value) {
        best_value = current_short[i];
        best = i;
      }
    }
    current_short[best] -= int64_t(n_free);
    cp.buckets[free_buckets[k]] = cp.active[best];
  }
}

}  // namespace

uint16_t load_group_index(const std::string& key) {
  static std::mutex mutex;
  static std::unordered_map<std::string, uint16_t> known;
  std::lock_guard lock(mutex);
  if (auto it = known.find(key); it != known.end()) return it->second;
  if (known.size() >= kMaxLoadGroups)
    return uint16_t(std::hash<std::string>{}(key) % kMaxLoadGroups);
  const uint16_t index = uint16_t(known.size());
  known.emplace(key, index);
  return index;
}

std::string load_group_key(const config::SegmentList& sl) {
  if (!sl.load_group.empty()) return "group:" + sl.load_group;
  return sl.sids.empty() ? std::string("sid:") : "sid:" + net::to_string(sl.sids.front());
}

uint32_t factor_to_q16(double factor) {
  if (!(factor > 0)) return 0;  // also NaN
  if (factor > kMaxFactor) factor = kMaxFactor;
  return uint32_t(std::llround(factor * kFactorOne));
}

std::unique_ptr<const CompiledPolicy> compile_policy(const config::Policy& p, const CompileEnv& env,
                                                     std::span<const uint32_t> factors_q16,
                                                     config::ConfigError& error,
                                                     uint64_t rail_mask) {
  const std::string ppath = config::policy_path(p.name);
  if (p.segment_lists.empty()) {
    error = {ppath + "/segment-list", "a policy needs at least one segment list"};
    return nullptr;
  }
  if (p.segment_lists.size() > kMaxPaths) {
    error = {ppath + "/segment-list", "more than " + std::to_string(kMaxPaths) + " segment lists"};
    return nullptr;
  }
  if (!factors_q16.empty() && factors_q16.size() != p.segment_lists.size()) {
    error = {ppath, "internal: factor count does not match the segment lists"};
    return nullptr;
  }
  auto cp = std::make_unique<CompiledPolicy>();
  cp->version = g_next_version.fetch_add(1, std::memory_order_relaxed);
  cp->lineage = next_lineage();
  cp->mode = p.selection;
  cp->default_source = !p.source;
  cp->rail_mask = rail_mask;
  cp->name = p.name;
  cp->path_count = uint8_t(p.segment_lists.size());
  const uint64_t hz = env.tsc_hz ? env.tsc_hz : 1000000;
  cp->flowlet_gap_tsc = uint64_t(p.flowlet_gap_us) * hz / 1000000;
  cp->idle_gap_tsc = uint64_t(p.idle_gap_us) * hz / 1000000;
  for (uint8_t op : p.spray_opcodes) cp->spray_opcodes[op >> 6] |= uint64_t(1) << (op & 63);

  cp->paths.resize(p.segment_lists.size());
  for (size_t i = 0; i < p.segment_lists.size(); ++i) {
    const config::SegmentList& sl = p.segment_lists[i];
    CompiledPath& path = cp->paths[i];
    srv6::TemplateSpec spec;
    spec.source = p.source ? *p.source : env.default_source;
    spec.sids = sl.sids;
    spec.mode = p.encap;
    spec.usid = p.usid;
    spec.tag = sl.path_id;
    spec.hop_limit = env.hop_limit;
    const srv6::BuildStatus st = srv6::build_template(spec, path.encap);
    if (st != srv6::BuildStatus::ok) {
      error = {config::segment_list_path(p.name, sl.name) + "/sid",
               std::string("cannot build the encapsulation: ") + srv6::to_string(st)};
      return nullptr;
    }
    path.path_id = sl.path_id;
    path.backup = sl.backup;
    path.weight = sl.weight;
    path.factor_q16 = factors_q16.empty() ? kFactorOne : factors_q16[i];
    path.effective_weight = uint64_t(path.weight) * path.factor_q16;
    path.name = sl.name;
    path.load_group = load_group_key(sl);
    cp->load_group[i] = load_group_index(path.load_group);
  }
  compute_selection(*cp);
  return cp;
}

std::unique_ptr<const CompiledPolicy> with_factors(const CompiledPolicy& p,
                                                   std::span<const double> factors,
                                                   config::ConfigError& error, uint64_t down_mask) {
  if (factors.size() != p.paths.size()) {
    error = {config::policy_path(p.name), "expected " + std::to_string(p.paths.size()) +
                                              " factors, got " + std::to_string(factors.size())};
    return nullptr;
  }
  for (size_t i = 0; i < factors.size(); ++i) {
    if (!std::isfinite(factors[i]) || factors[i] < 0 || factors[i] > kMaxFactor) {
      error = {config::segment_list_path(p.name, p.paths[i].name),
               "engine factor must be within [0, " + std::to_string(int(kMaxFactor)) + "]"};
      return nullptr;
    }
  }
  auto cp = std::make_unique<CompiledPolicy>(p);
  cp->version = g_next_version.fetch_add(1, std::memory_order_relaxed);
  for (size_t i = 0; i < factors.size(); ++i) {
    CompiledPath& path = cp->paths[i];
    path.factor_q16 = factor_to_q16(factors[i]);
    path.effective_weight = uint64_t(path.weight) * path.factor_q16;
  }
  compute_selection(*cp, &p.buckets);
  cp->down_mask = down_mask & ~cp->active_mask;
  if (cp->paths.size() < 64) cp->down_mask &= (uint64_t(1) << cp->paths.size()) - 1;
  return cp;
}

}  // namespace srv6gw::policy
