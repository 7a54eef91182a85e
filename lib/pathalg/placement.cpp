// SPDX-License-Identifier: BSD-3-Clause
#include "pathalg/placement.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>

namespace srv6gw::pathalg {

double link_load_s(const Topology& t, DirLinkId d, uint64_t bytes) {
  const uint64_t mbps = t.capacity_mbps(d);
  if (mbps == 0) return bytes ? std::numeric_limits<double>::infinity() : 0.0;
  return double(bytes) * 8.0 / (double(mbps) * 1e6);
}

namespace {

// Usable candidate paths of every flow in flat arrays: flow f has candidates
// [cand_begin[f], cand_begin[f+1]); candidate c has links [link_begin[c], link_begin[c+1]) and
// is path number `index[c]` of cache.between(src, dst).
struct Candidates {
  std::vector<uint32_t> cand_begin{0};
  std::vector<uint32_t> index;
  std::vector<uint32_t> link_begin{0};
  std::vector<DirLinkId> links;

  size_t count(size_t f) const { return cand_begin[f + 1] - cand_begin[f]; }
  std::span<const DirLinkId> path(uint32_t c) const {
    return {links.data() + link_begin[c], link_begin[c + 1] - link_begin[c]};
  }
};

Candidates candidates(const PathCache& cache, std::span<const Flow> flows) {
  const Topology& t = cache.topology();
  Candidates c;
  PathList paths;
  // Flows of one (src, dst) pair share their candidates: compute each pair once.
  std::unordered_map<uint64_t, std::pair<uint32_t, uint32_t>> done;  // pair -> first cand, n
  for (const Flow& f : flows) {
    const uint64_t key = uint64_t(f.src) << 32 | f.dst;
    auto it = done.find(key);
    if (it != done.end()) {
      const auto [first, n] = it->second;
      for (uint32_t k = 0; k < n; ++k) {
        const auto links = c.path(first + k);
        const uint32_t idx = c.index[first + k];
        std::vector<DirLinkId> copy(links.begin(), links.end());
        c.links.insert(c.links.end(), copy.begin(), copy.end());
        c.link_begin.push_back(uint32_t(c.links.size()));
        c.index.push_back(idx);
      }
      c.cand_begin.push_back(uint32_t(c.index.size()));
      continue;
    }
    const uint32_t first = uint32_t(c.index.size());
    paths.clear();
    if (f.src < t.node_count() && f.dst < t.node_count()) cache.append_between(f.src, f.dst, paths);
    for (size_t i = 0; i < paths.size(); ++i) {
      const auto links = paths.links(i);
      if (!usable(t, links)) continue;
      c.links.insert(c.links.end(), links.begin(), links.end());
      c.link_begin.push_back(uint32_t(c.links.size()));
      c.index.push_back(uint32_t(i));
    }
    c.cand_begin.push_back(uint32_t(c.index.size()));
    done.emplace(key, std::pair{first, uint32_t(c.index.size()) - first});
  }
  return c;
}

// Seconds per byte of every directed link (infinity when down).
std::vector<double> seconds_per_byte(const Topology& t) {
  std::vector<double> s(2 * t.link_count());
  for (DirLinkId d = 0; d < s.size(); ++d) {
    const uint64_t mbps = t.capacity_mbps(d);
    s[d] = mbps ? 8.0 / (double(mbps) * 1e6) : std::numeric_limits<double>::infinity();
  }
  return s;
}

double lower_bound(const Topology& t, std::span<const Flow> flows, const Candidates& c,
                   const std::vector<double>& spb) {
  double lb = 0;
  // (a) each flow alone on its best path.
  for (size_t f = 0; f < flows.size(); ++f) {
    double best = std::numeric_limits<double>::infinity();
    for (uint32_t k = c.cand_begin[f]; k < c.cand_begin[f + 1]; ++k) {
      double worst = 0;
      for (DirLinkId d : c.path(k)) worst = std::max(worst, double(flows[f].bytes) * spb[d]);
      best = std::min(best, worst);
    }
    if (c.count(f)) lb = std::max(lb, best);
  }
  // (b) per hop position, the set of links a flow's candidates cross there: every flow with
  // the same set puts its bytes on that set, whatever path it takes.
  struct Group {
    std::vector<DirLinkId> links;
    uint64_t bytes = 0;
  };
  std::unordered_map<std::string, Group> groups;
  std::vector<DirLinkId> set;
  std::string key;
  for (size_t f = 0; f < flows.size(); ++f) {
    if (!c.count(f)) continue;
    const size_t hops = c.path(c.cand_begin[f]).size();
    for (size_t h = 0; h < hops; ++h) {
      set.clear();
      for (uint32_t k = c.cand_begin[f]; k < c.cand_begin[f + 1]; ++k) {
        const auto p = c.path(k);
        if (h < p.size()) set.push_back(p[h]);
      }
      std::sort(set.begin(), set.end());
      set.erase(std::unique(set.begin(), set.end()), set.end());
      key.assign(reinterpret_cast<const char*>(set.data()), set.size() * sizeof(DirLinkId));
      Group& g = groups[key];
      if (g.links.empty()) g.links = set;
      g.bytes += flows[f].bytes;
    }
  }
  for (const auto& [k, g] : groups) {
    double cap_bytes_per_s = 0;
    for (DirLinkId d : g.links) cap_bytes_per_s += double(t.capacity_mbps(d)) * 1e6 / 8.0;
    if (cap_bytes_per_s > 0) lb = std::max(lb, double(g.bytes) / cap_bytes_per_s);
  }
  return lb;
}

struct Search {
  std::span<const Flow> flows;
  const Candidates& c;
  const std::vector<double>& spb;
  std::vector<uint32_t> order;   // flows by size, largest first
  std::vector<uint64_t> load;    // bytes per directed link
  std::vector<uint32_t> choice;  // candidate per flow (absolute index), or kNoPath
  std::vector<uint32_t> best_choice;
  double best = 0;
  double lb = 0;
  uint64_t nodes = 0;
  uint64_t budget = 0;
  bool exhausted = false;

  double path_max_after(uint32_t cand, uint64_t bytes) const {
    double m = 0;
    for (DirLinkId d : c.path(cand)) m = std::max(m, double(load[d] + bytes) * spb[d]);
    return m;
  }

  void dfs(size_t depth, double current) {
    if (current >= best - best * 1e-12) return;
    if (depth == order.size()) {
      best = current;
      best_choice = choice;
      return;
    }
    if (++nodes > budget) {
      exhausted = true;
      return;
    }
    const uint32_t f = order[depth];
    const uint64_t bytes = flows[f].bytes;
    // Children in order of the load they lead to: good solutions early, more pruning.
    uint32_t kids[64];
    double after[64];
    uint32_t n = 0;
    for (uint32_t k = c.cand_begin[f]; k < c.cand_begin[f + 1] && n < 64; ++k) {
      kids[n] = k;
      after[n] = std::max(current, path_max_after(k, bytes));
      ++n;
    }
    if (n == 0) {  // no usable path: skip this flow
      dfs(depth + 1, current);
      return;
    }
    std::vector<uint32_t> idx(n);
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(),
                     [&](uint32_t a, uint32_t b) { return after[a] < after[b]; });
    for (uint32_t i : idx) {
      if (after[i] >= best - best * 1e-12) break;
      for (DirLinkId d : c.path(kids[i])) load[d] += bytes;
      choice[f] = kids[i];
      dfs(depth + 1, after[i]);
      for (DirLinkId d : c.path(kids[i])) load[d] -= bytes;
      choice[f] = kNoPath;
      if (exhausted) return;
      if (best <= lb * (1 + 1e-12)) return;  // cannot do better than the bound
    }
  }
};

}  // namespace

double placement_lower_bound(const PathCache& cache, std::span<const Flow> flows) {
  const Candidates c = candidates(cache, flows);
  return lower_bound(cache.topology(), flows, c, seconds_per_byte(cache.topology()));
}

double max_load_of(const PathCache& cache, std::span<const Flow> flows,
                   std::span<const uint32_t> path_of) {
  const Topology& t = cache.topology();
  std::vector<uint64_t> load(2 * t.link_count(), 0);
  PathList paths;
  for (size_t f = 0; f < flows.size(); ++f) {
    if (path_of[f] == kNoPath) continue;
    paths.clear();
    cache.append_between(flows[f].src, flows[f].dst, paths);
    if (path_of[f] >= paths.size()) continue;
    for (DirLinkId d : paths.links(path_of[f])) load[d] += flows[f].bytes;
  }
  double m = 0;
  for (DirLinkId d = 0; d < load.size(); ++d) {
    if (load[d]) m = std::max(m, link_load_s(t, d, load[d]));
  }
  return m;
}

Placement place(const PathCache& cache, std::span<const Flow> flows, const PlacementOptions& opt) {
  const Topology& t = cache.topology();
  const Candidates c = candidates(cache, flows);
  const std::vector<double> spb = seconds_per_byte(t);
  const size_t nf = flows.size();
  Placement out;
  out.lower_bound_s = lower_bound(t, flows, c, spb);

  std::vector<uint32_t> order(nf);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return flows[a].bytes > flows[b].bytes; });

  // Greedy, largest first: the candidate whose most loaded link would be lightest; ties by
  // the smaller sum of loads along the path, then the lower index.
  std::vector<uint64_t> load(2 * t.link_count(), 0);
  std::vector<uint32_t> choice(nf, kNoPath);
  for (uint32_t f : order) {
    const uint64_t bytes = flows[f].bytes;
    uint32_t best = kNoPath;
    double best_max = 0, best_sum = 0;
    for (uint32_t k = c.cand_begin[f]; k < c.cand_begin[f + 1]; ++k) {
      double m = 0, s = 0;
      for (DirLinkId d : c.path(k)) {
        const double l = double(load[d] + bytes) * spb[d];
        m = std::max(m, l);
        s += l;
      }
      if (best == kNoPath || m < best_max || (m == best_max && s < best_sum)) {
        best = k;
        best_max = m;
        best_sum = s;
      }
    }
    choice[f] = best;
    if (best != kNoPath) {
      for (DirLinkId d : c.path(best)) load[d] += bytes;
    }
  }

  // Local improvement: move a flow off the most loaded link to the candidate that keeps every
  // one of its links strictly below that load (the best such move). Each move lowers the
  // number of links at the maximum or the maximum itself, so it ends.
  std::vector<std::vector<uint32_t>> on_link(load.size());
  for (size_t f = 0; f < nf; ++f) {
    if (choice[f] == kNoPath) continue;
    for (DirLinkId d : c.path(choice[f])) on_link[d].push_back(uint32_t(f));
  }
  auto hottest = [&] {
    DirLinkId h = 0;
    double m = -1;
    for (DirLinkId d = 0; d < load.size(); ++d) {
      if (!load[d]) continue;
      const double l = double(load[d]) * spb[d];
      if (l > m) {
        m = l;
        h = d;
      }
    }
    return std::pair{h, m};
  };
  auto on_path = [&](uint32_t cand, DirLinkId d) {
    for (DirLinkId x : c.path(cand)) {
      if (x == d) return true;
    }
    return false;
  };
  for (unsigned round = 0; round < opt.improvement_rounds; ++round) {
    const auto [h, m] = hottest();
    if (m <= 0) break;
    auto& list = on_link[h];
    // Drop stale entries (flows moved away since).
    list.erase(std::remove_if(list.begin(), list.end(),
                              [&](uint32_t f) { return !on_path(choice[f], h); }),
               list.end());
    uint32_t best_flow = kNoPath, best_cand = kNoPath;
    double best_after = m;
    for (uint32_t f : list) {
      const uint64_t bytes = flows[f].bytes;
      for (uint32_t k = c.cand_begin[f]; k < c.cand_begin[f + 1]; ++k) {
        if (k == choice[f] || on_path(k, h)) continue;
        double after = 0;
        for (DirLinkId d : c.path(k)) {
          const uint64_t add = on_path(choice[f], d) ? 0 : bytes;
          after = std::max(after, double(load[d] + add) * spb[d]);
        }
        if (after < best_after) {
          best_after = after;
          best_flow = f;
          best_cand = k;
        }
      }
    }
    if (best_flow == kNoPath) break;
    const uint64_t bytes = flows[best_flow].bytes;
    for (DirLinkId d : c.path(choice[best_flow])) load[d] -= bytes;
    choice[best_flow] = best_cand;
    for (DirLinkId d : c.path(best_cand)) {
      load[d] += bytes;
      on_link[d].push_back(best_flow);
    }
  }

  double heuristic_max = 0;
  for (DirLinkId d = 0; d < load.size(); ++d) {
    if (load[d]) heuristic_max = std::max(heuristic_max, double(load[d]) * spb[d]);
  }

  // Exact branch and bound on small instances, starting from the heuristic's value.
  bool optimal = heuristic_max <= out.lower_bound_s * (1 + 1e-12);
  if (opt.exact && !optimal && nf <= 64) {
    Search s{flows,
             c,
             spb,
             order,
             std::vector<uint64_t>(load.size(), 0),
             std::vector<uint32_t>(nf, kNoPath),
             choice,
             heuristic_max,
             out.lower_bound_s,
             0,
             opt.exact_node_budget,
             false};
    // Strictly better solutions only: start just above the heuristic so it is matched.
    s.best = heuristic_max;
    s.dfs(0, 0.0);
    out.search_nodes = s.nodes;
    choice = s.best_choice;
    optimal = !s.exhausted;
  }

  out.path_of.assign(nf, kNoPath);
  out.link_bytes.assign(load.size(), 0);
  for (size_t f = 0; f < nf; ++f) {
    if (choice[f] == kNoPath) {
      ++out.unplaced;
      continue;
    }
    out.path_of[f] = c.index[choice[f]];
    for (DirLinkId d : c.path(choice[f])) out.link_bytes[d] += flows[f].bytes;
  }
  out.max_load_s = 0;
  for (DirLinkId d = 0; d < out.link_bytes.size(); ++d) {
    if (!out.link_bytes[d]) continue;
    const double l = double(out.link_bytes[d]) * spb[d];
    if (l > out.max_load_s) {
      out.max_load_s = l;
      out.hottest = d;
    }
  }
  out.optimal = optimal;
  return out;
}

}  // namespace srv6gw::pathalg
