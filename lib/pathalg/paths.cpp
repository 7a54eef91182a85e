// SPDX-License-Identifier: BSD-3-Clause
#include "pathalg/paths.hpp"

#include <algorithm>
#include <atomic>
#include <limits>
#include <queue>
#include <set>
#include <utility>

namespace srv6gw::pathalg {

void PathList::add(std::span<const NodeId> nodes, std::span<const DirLinkId> links) {
  nodes_.insert(nodes_.end(), nodes.begin(), nodes.end());
  links_.insert(links_.end(), links.begin(), links.end());
  node_begin_.push_back(uint32_t(nodes_.size()));
  link_begin_.push_back(uint32_t(links_.size()));
}

void PathList::clear() {
  nodes_.clear();
  links_.clear();
  node_begin_.assign(1, 0);
  link_begin_.assign(1, 0);
}

uint64_t bottleneck_mbps(const Topology& t, std::span<const DirLinkId> links) {
  uint64_t b = std::numeric_limits<uint64_t>::max();
  for (DirLinkId d : links) b = std::min(b, t.capacity_mbps(d));
  return links.empty() ? 0 : b;
}

bool usable(const Topology& t, std::span<const DirLinkId> links) {
  for (DirLinkId d : links) {
    if (t.capacity_mbps(d) == 0) return false;
  }
  return true;
}

std::string path_key(const Topology& t, std::span<const NodeId> nodes) {
  std::string k;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (i) k += '>';
    k += t.node(nodes[i]).name;
  }
  return k;
}

// ---- PathCache -----------------------------------------------------------------------------

namespace {
constexpr uint32_t kInf = std::numeric_limits<uint32_t>::max();

// Hop distances and shortest-path counts from one source, hosts other than the source not
// being transit nodes.
struct Bfs {
  std::vector<uint32_t> dist;
  std::vector<uint32_t> count;
};

Bfs bfs_from(const Topology& t, NodeId s) {
  Bfs b;
  b.dist.assign(t.node_count(), kInf);
  b.count.assign(t.node_count(), 0);
  std::vector<NodeId> queue{s};
  b.dist[s] = 0;
  b.count[s] = 1;
  for (size_t i = 0; i < queue.size(); ++i) {
    const NodeId u = queue[i];
    if (u != s && t.node(u).is_host()) continue;
    for (const Adjacency& a : t.neighbours(u)) {
      const NodeId v = a.neighbour;
      if (b.dist[v] == kInf) {
        b.dist[v] = b.dist[u] + 1;
        queue.push_back(v);
      }
      if (b.dist[v] == b.dist[u] + 1) {
        const uint64_t c = uint64_t(b.count[v]) + b.count[u];
        b.count[v] = uint32_t(std::min<uint64_t>(c, kInf));
      }
    }
  }
  return b;
}
}  // namespace

struct PathCache::Tables {
  std::mutex mu;
  // Per source node, computed once under `mu` and published with a release store: readers
  // of a published table take no lock (the waypoint search asks millions of times).
  std::vector<std::unique_ptr<Bfs>> bfs;
  std::unique_ptr<std::atomic<const Bfs*>[]> published;
  std::unordered_map<uint64_t, std::unique_ptr<PathList>> switch_paths;

  const Bfs& from(const Topology& t, NodeId s) {
    if (const Bfs* b = published[s].load(std::memory_order_acquire)) return *b;
    std::lock_guard lock(mu);
    return locked_from(t, s);
  }
  // With `mu` held.
  const Bfs& locked_from(const Topology& t, NodeId s) {
    if (!bfs[s]) {
      bfs[s] = std::make_unique<Bfs>(bfs_from(t, s));
      published[s].store(bfs[s].get(), std::memory_order_release);
    }
    return *bfs[s];
  }
};

PathCache::PathCache(const Topology& t, PathOptions opt)
    : topo_(t), opt_(opt), tables_(std::make_unique<Tables>()) {
  tables_->bfs.resize(t.node_count());
  tables_->published = std::make_unique<std::atomic<const Bfs*>[]>(t.node_count());
  for (size_t i = 0; i < t.node_count(); ++i) tables_->published[i].store(nullptr);
}

PathCache::~PathCache() = default;

uint32_t PathCache::distance(NodeId src, NodeId dst) const {
  return tables_->from(topo_, src).dist[dst];
}

uint32_t PathCache::shortest_path_count(NodeId src, NodeId dst) const {
  return tables_->from(topo_, src).count[dst];
}

namespace {

// Every shortest path a -> b between two switches, through switches only, neighbours in node
// order, at most `cap`.
void enumerate(const Topology& t, const Bfs& to_b, NodeId a, NodeId b, unsigned cap,
               PathList& out) {
  if (to_b.dist[a] == kInf) return;
  std::vector<NodeId> nodes{a};
  std::vector<DirLinkId> links;
  // Explicit stack of neighbour cursors (depth = distance, small).
  std::vector<size_t> cursor{0};
  while (!cursor.empty() && out.size() < cap) {
    const NodeId u = nodes.back();
    if (u == b) {
      out.add(nodes, links);
      nodes.pop_back();
      cursor.pop_back();
      if (!links.empty()) links.pop_back();
      continue;
    }
    const auto adj = t.neighbours(u);
    size_t& c = cursor.back();
    bool descended = false;
    while (c < adj.size()) {
      const Adjacency& x = adj[c++];
      const NodeId v = x.neighbour;
      if (to_b.dist[v] + 1 != to_b.dist[u]) continue;
      if (v != b && t.node(v).is_host()) continue;
      nodes.push_back(v);
      links.push_back(x.out);
      cursor.push_back(0);
      descended = true;
      break;
    }
    if (!descended) {
      nodes.pop_back();
      cursor.pop_back();
      if (!links.empty()) links.pop_back();
    }
  }
}

}  // namespace

PathList PathCache::between(NodeId src, NodeId dst) const {
  PathList out;
  append_between(src, dst, out);
  return out;
}

void PathCache::append_between(NodeId src, NodeId dst, PathList& out) const {
  if (src == dst || src >= topo_.node_count() || dst >= topo_.node_count()) return;
  // Ends: a host's attachment switches (with the access link), or the switch itself.
  struct End {
    NodeId sw;
    DirLinkId link;
    bool has_link;
  };
  std::vector<End> src_ends, dst_ends;
  auto ends = [&](NodeId n, bool outgoing, std::vector<End>& e) {
    if (!topo_.node(n).is_host()) {
      e.push_back({n, 0, false});
      return;
    }
    for (const Adjacency& a : topo_.neighbours(n)) {
      if (topo_.node(a.neighbour).is_host()) continue;
      // Outgoing: host -> switch is a.out; incoming: switch -> host is its reverse.
      e.push_back({a.neighbour, outgoing ? a.out : (a.out ^ 1u), true});
    }
  };
  ends(src, true, src_ends);
  ends(dst, false, dst_ends);
  uint32_t best = kInf;
  for (const End& s : src_ends) {
    for (const End& d : dst_ends) {
      const uint32_t dd = s.sw == d.sw ? 0 : distance(s.sw, d.sw);
      if (dd != kInf) best = std::min(best, dd + s.has_link + d.has_link);
    }
  }
  if (best == kInf) return;
  const size_t start = out.size();
  std::vector<NodeId> nodes;
  std::vector<DirLinkId> links;
  for (const End& s : src_ends) {
    for (const End& d : dst_ends) {
      if (out.size() - start >= opt_.max_paths) return;
      const uint32_t dd = s.sw == d.sw ? 0 : distance(s.sw, d.sw);
      if (dd == kInf || dd + s.has_link + d.has_link != best) continue;
      const PathList* fabric = nullptr;
      PathList self;
      if (s.sw == d.sw) {
        const NodeId one[] = {s.sw};
        self.add(one, {});
        fabric = &self;
      } else {
        const uint64_t key = uint64_t(s.sw) << 32 | d.sw;
        std::lock_guard lock(tables_->mu);
        auto& slot = tables_->switch_paths[key];
        if (!slot) {
          slot = std::make_unique<PathList>();
          enumerate(topo_, tables_->locked_from(topo_, d.sw), s.sw, d.sw, opt_.max_paths, *slot);
        }
        fabric = slot.get();
      }
      for (size_t i = 0; i < fabric->size() && out.size() - start < opt_.max_paths; ++i) {
        nodes.clear();
        links.clear();
        if (s.has_link) {
          nodes.push_back(src);
          links.push_back(s.link);
        }
        const auto fn = fabric->nodes(i);
        const auto fl = fabric->links(i);
        nodes.insert(nodes.end(), fn.begin(), fn.end());
        links.insert(links.end(), fl.begin(), fl.end());
        if (d.has_link) {
          nodes.push_back(dst);
          links.push_back(d.link);
        }
        out.add(nodes, links);
      }
    }
  }
}

// ---- disjoint paths (successive shortest paths, unit capacities) ---------------------------

PathList disjoint_paths(const Topology& t, NodeId src, NodeId dst, unsigned k) {
  PathList out;
  if (src == dst || k == 0) return out;
  const size_t n = t.node_count();
  // flow[l]: +1 when link l carries flow a -> b, -1 when b -> a, 0 none.
  std::vector<int8_t> flow(t.link_count(), 0);
  auto transit_ok = [&](NodeId v) { return v == src || v == dst || !t.node(v).is_host(); };
  for (unsigned round = 0; round < k; ++round) {
    // Bellman-Ford (queue based) on the residual graph; costs +1 / -1.
    std::vector<int64_t> dist(n, std::numeric_limits<int64_t>::max());
    std::vector<DirLinkId> via(n, 0);
    std::vector<char> in_queue(n, 0);
    std::vector<NodeId> pred(n, kNoNode);
    std::queue<NodeId> q;
    dist[src] = 0;
    q.push(src);
    size_t relaxations = 0;
    while (!q.empty() && relaxations < n * t.link_count() * 2 + 16) {
      const NodeId u = q.front();
      q.pop();
      in_queue[u] = 0;
      if (u != src && !transit_ok(u)) continue;
      if (u == dst) continue;
      for (const Adjacency& a : t.neighbours(u)) {
        const LinkId l = link_of(a.out);
        if (t.link(l).capacity_mbps() == 0) continue;
        const int8_t dir = is_reverse(a.out) ? -1 : 1;  // flow sign of pushing u -> v
        if (flow[l] == dir) continue;                   // already used this way
        const int64_t cost = flow[l] == -dir ? -1 : 1;  // cancel or use
        const NodeId v = a.neighbour;
        if (!transit_ok(v)) continue;
        if (dist[u] + cost < dist[v]) {
          dist[v] = dist[u] + cost;
          via[v] = a.out;
          pred[v] = u;
          ++relaxations;
          if (!in_queue[v]) {
            in_queue[v] = 1;
            q.push(v);
          }
        }
      }
    }
    if (dist[dst] == std::numeric_limits<int64_t>::max()) break;
    for (NodeId v = dst; v != src; v = pred[v]) {
      const LinkId l = link_of(via[v]);
      flow[l] += is_reverse(via[v]) ? -1 : 1;
    }
  }
  // Decompose: walk from src along links carrying flow away from the current node.
  std::vector<int8_t> left = flow;
  for (;;) {
    std::vector<NodeId> nodes{src};
    std::vector<DirLinkId> links;
    NodeId u = src;
    while (u != dst) {
      bool moved = false;
      for (const Adjacency& a : t.neighbours(u)) {
        const LinkId l = link_of(a.out);
        const int8_t dir = is_reverse(a.out) ? -1 : 1;
        if (left[l] == dir) {
          left[l] = 0;
          links.push_back(a.out);
          nodes.push_back(a.neighbour);
          u = a.neighbour;
          moved = true;
          break;
        }
      }
      if (!moved) break;
    }
    if (u != dst) break;
    out.add(nodes, links);
  }
  return out;
}

// ---- backups (Yen's k shortest paths under link-sharing penalties) -------------------------

namespace {

struct Weighted {
  std::vector<NodeId> nodes;
  std::vector<DirLinkId> links;
  uint64_t cost = 0;
  bool operator<(const Weighted& o) const {
    return cost != o.cost ? cost < o.cost : nodes < o.nodes;
  }
};

// Dijkstra from `from` to `to` avoiding banned nodes and directed links; hosts other than the
// endpoints are never transit. Costs per link from `link_cost`. Ties broken by node id.
std::optional<Weighted> dijkstra(const Topology& t, NodeId from, NodeId to,
                                 const std::vector<uint64_t>& link_cost,
                                 const std::vector<char>& banned_node,
                                 const std::set<DirLinkId>& banned_link) {
  const size_t n = t.node_count();
  std::vector<uint64_t> dist(n, std::numeric_limits<uint64_t>::max());
  std::vector<DirLinkId> via(n, 0);
  std::vector<NodeId> pred(n, kNoNode);
  using Item = std::pair<uint64_t, NodeId>;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> pq;
  dist[from] = 0;
  pq.push({0, from});
  while (!pq.empty()) {
    auto [d, u] = pq.top();
    pq.pop();
    if (d != dist[u]) continue;
    if (u == to) break;
    if (u != from && t.node(u).is_host()) continue;
    for (const Adjacency& a : t.neighbours(u)) {
      const NodeId v = a.neighbour;
      if (banned_node[v] || banned_link.count(a.out)) continue;
      if (v != to && t.node(v).is_host()) continue;
      const uint64_t nd = d + link_cost[link_of(a.out)];
      if (nd < dist[v]) {
        dist[v] = nd;
        via[v] = a.out;
        pred[v] = u;
        pq.push({nd, v});
      }
    }
  }
  if (dist[to] == std::numeric_limits<uint64_t>::max()) return std::nullopt;
  Weighted w;
  w.cost = dist[to];
  for (NodeId v = to; v != from; v = pred[v]) {
    w.nodes.push_back(v);
    w.links.push_back(via[v]);
  }
  w.nodes.push_back(from);
  std::reverse(w.nodes.begin(), w.nodes.end());
  std::reverse(w.links.begin(), w.links.end());
  return w;
}

// The cheapest simple path src -> dst with more hops than the shortest (nullopt when the
// cheapest such walk repeats a node).
std::optional<Weighted> longer_path(const Topology& t, NodeId src, NodeId dst,
                                    const std::vector<uint64_t>& link_cost) {
  std::vector<uint32_t> hops(t.node_count(), UINT32_MAX);
  std::vector<NodeId> q{src};
  hops[src] = 0;
  for (size_t i = 0; i < q.size(); ++i) {
    const NodeId u = q[i];
    if (u != src && t.node(u).is_host()) continue;
    for (const Adjacency& a : t.neighbours(u)) {
      if (hops[a.neighbour] == UINT32_MAX) {
        hops[a.neighbour] = hops[u] + 1;
        q.push_back(a.neighbour);
      }
    }
  }
  if (hops[dst] == UINT32_MAX) return std::nullopt;
  const uint32_t layers = hops[dst] + 2;  // layer h = hops so far; the last one "> shortest"
  const size_t n = t.node_count();
  auto state = [&](NodeId v, uint32_t h) { return size_t(h) * n + v; };
  std::vector<uint64_t> dist(n * layers, std::numeric_limits<uint64_t>::max());
  std::vector<uint32_t> pred(n * layers, UINT32_MAX);
  std::vector<DirLinkId> via(n * layers, 0);
  using Item = std::pair<uint64_t, uint32_t>;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> pq;
  dist[state(src, 0)] = 0;
  pq.push({0, uint32_t(state(src, 0))});
  const size_t target = state(dst, layers - 1);
  while (!pq.empty()) {
    auto [d, st] = pq.top();
    pq.pop();
    if (d != dist[st]) continue;
    if (st == target) break;
    const NodeId u = NodeId(st % n);
    const uint32_t h = uint32_t(st / n);
    if (u == dst || (u != src && t.node(u).is_host())) continue;
    for (const Adjacency& a : t.neighbours(u)) {
      const NodeId v = a.neighbour;
      if (v != dst && t.node(v).is_host()) continue;
      const uint32_t nh = std::min(h + 1, layers - 1);
      const size_t ns = state(v, nh);
      const uint64_t nd = d + link_cost[link_of(a.out)];
      if (nd < dist[ns]) {
        dist[ns] = nd;
        pred[ns] = st;
        via[ns] = a.out;
        pq.push({nd, uint32_t(ns)});
      }
    }
  }
  if (dist[target] == std::numeric_limits<uint64_t>::max()) return std::nullopt;
  Weighted w;
  w.cost = dist[target];
  for (size_t st = target; st != state(src, 0); st = pred[st]) {
    w.nodes.push_back(NodeId(st % n));
    w.links.push_back(via[st]);
  }
  w.nodes.push_back(src);
  std::reverse(w.nodes.begin(), w.nodes.end());
  std::reverse(w.links.begin(), w.links.end());
  std::vector<NodeId> sorted = w.nodes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return std::nullopt;
  return w;
}

}  // namespace

PathList backup_paths(const Topology& t, NodeId src, NodeId dst, const PathList& primaries,
                      unsigned k) {
  PathList out;
  if (k == 0 || src == dst) return out;
  // A shared link costs more than any detour's extra hops: fewest shared links first.
  const uint64_t penalty = t.node_count() + 1;
  std::vector<uint64_t> used(t.link_count(), 0);
  std::set<std::vector<NodeId>> known;
  for (size_t i = 0; i < primaries.size(); ++i) {
    for (DirLinkId d : primaries.links(i)) ++used[link_of(d)];
    const auto pn = primaries.nodes(i);
    known.emplace(pn.begin(), pn.end());
  }
  for (unsigned b = 0; b < k; ++b) {
    std::vector<uint64_t> cost(t.link_count());
    for (LinkId l = 0; l < t.link_count(); ++l) cost[l] = 1 + penalty * used[l];
    // Fast path: when the primaries are every shortest path, the best path of at least one
    // more hop is new. Dijkstra over (node, hops so far capped at shortest + 1); its answer
    // counts only when it is a simple path not known yet (else Yen below decides).
    if (auto w = longer_path(t, src, dst, cost); w && !known.count(w->nodes)) {
      out.add(w->nodes, w->links);
      known.insert(w->nodes);
      for (DirLinkId d : w->links) ++used[link_of(d)];
      continue;
    }
    // Yen: A = accepted paths in cost order, B = candidates. Stop at the first path not known.
    std::vector<Weighted> accepted;
    std::set<Weighted> candidates;
    std::vector<char> no_nodes(t.node_count(), 0);
    auto first = dijkstra(t, src, dst, cost, no_nodes, {});
    if (!first) break;
    std::optional<Weighted> found;
    Weighted current = *first;
    const size_t limit = known.size() + 64;
    for (size_t iter = 0; iter < limit; ++iter) {
      if (!known.count(current.nodes)) {
        found = current;
        break;
      }
      accepted.push_back(current);
      for (size_t i = 0; i + 1 < current.nodes.size(); ++i) {
        const NodeId spur = current.nodes[i];
        std::set<DirLinkId> banned_links;
        for (const Weighted& p : accepted) {
          if (p.nodes.size() > i &&
              std::equal(p.nodes.begin(), p.nodes.begin() + long(i) + 1, current.nodes.begin())) {
            banned_links.insert(p.links[i]);
          }
        }
        std::vector<char> banned_nodes(t.node_count(), 0);
        uint64_t root_cost = 0;
        for (size_t j = 0; j < i; ++j) {
          banned_nodes[current.nodes[j]] = 1;
          root_cost += cost[link_of(current.links[j])];
        }
        auto tail = dijkstra(t, spur, dst, cost, banned_nodes, banned_links);
        if (!tail) continue;
        Weighted cand;
        cand.nodes.assign(current.nodes.begin(), current.nodes.begin() + long(i));
        cand.links.assign(current.links.begin(), current.links.begin() + long(i));
        cand.nodes.insert(cand.nodes.end(), tail->nodes.begin(), tail->nodes.end());
        cand.links.insert(cand.links.end(), tail->links.begin(), tail->links.end());
        cand.cost = root_cost + tail->cost;
        bool dup = false;
        for (const Weighted& p : accepted) dup |= p.nodes == cand.nodes;
        if (!dup) candidates.insert(std::move(cand));
      }
      if (candidates.empty()) break;
      current = *candidates.begin();
      candidates.erase(candidates.begin());
    }
    if (!found) break;
    out.add(found->nodes, found->links);
    known.insert(found->nodes);
    for (DirLinkId d : found->links) ++used[link_of(d)];
  }
  return out;
}

}  // namespace srv6gw::pathalg
