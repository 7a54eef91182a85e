// SPDX-License-Identifier: BSD-3-Clause
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

// ---- helpers -------------------------------------------------------------------------------

namespace {

template <typename... Parts>
std::string cat(const Parts&... parts) {
  std::string s;
  (s += ... += parts);
  return s;
}

bool valid_name(std::string_view n) {
  return !n.empty() && n.size() <= 64;
}

// Segment list name of a path: its transit switches (between the first and last switch),
// else every switch, else "path<i>"; the first that is free in the policy and fits.
std::string list_name(const Topology& t, std::span<const NodeId> nodes, size_t index,
                      const std::unordered_set<std::string>& taken) {
  std::vector<NodeId> switches;
  for (NodeId n : nodes) {
    if (!t.node(n).is_host()) switches.push_back(n);
  }
  auto join = [&](size_t from, size_t to) {
    std::string s;
    for (size_t i = from; i < to; ++i) {
      if (!s.empty()) s += '.';
      s += t.node(switches[i]).name;
    }
    return s;
  };
  if (switches.size() > 2) {
    std::string transit = join(1, switches.size() - 1);
    if (valid_name(transit) && !taken.count(transit)) return transit;
  }
  std::string all = join(0, switches.size());
  if (valid_name(all) && !taken.count(all)) return all;
  return cat("path", std::to_string(index));
}

std::string policy_name(const Topology& t, NodeId dst) {
  return cat("to-", t.node(dst).name);
}

// The single attachment switch of a host, or kNoNode when multi-homed.
NodeId sole_attachment(const Topology& t, NodeId h) {
  NodeId a = kNoNode;
  for (const Adjacency& x : t.neighbours(h)) {
    if (t.node(x.neighbour).is_host()) continue;
    if (a != kNoNode) return kNoNode;
    a = x.neighbour;
  }
  return a;
}

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

// ---- plan building -------------------------------------------------------------------------

namespace {

// What building needs besides the topology state: the design's paths and the id scheme.
struct Builder {
  const PathCache& cache;
  const Topology& state;  // link states in force (same nodes and links as the cache's)
  const PlanOptions& opt;
  GatewayBooks& books;
  // Per-switch-pair backup cache (design only); may be null.
  std::unordered_map<uint64_t, PathList>* backup_cache = nullptr;

  const Topology& design() const { return cache.topology(); }

  // Slots of the design range one destination takes.
  uint32_t slots(NodeId g, NodeId d) const {
    const uint32_t n = cache.shortest_path_count(g, d);
    return std::min({n, uint32_t(opt.max_paths), uint32_t(cache.options().max_paths)}) +
           opt.backups;
  }

  PathList backups_for(NodeId g, NodeId d, const PathList& primaries) {
    if (opt.backups == 0) return {};
    const Topology& t = design();
    const NodeId a = sole_attachment(t, g), b = sole_attachment(t, d);
    // Two hosts on one leaf and nowhere else: any other path would cross the leaf twice.
    if (a != kNoNode && a == b) return {};
    if (a == kNoNode || b == kNoNode || !backup_cache) {
      return backup_paths(t, g, d, primaries, opt.backups);
    }
    const uint64_t key = uint64_t(a) << 32 | b;
    auto it = backup_cache->find(key);
    if (it == backup_cache->end()) {
      const PathList fabric = cache.between(a, b);
      it = backup_cache->emplace(key, backup_paths(t, a, b, fabric, opt.backups)).first;
    }
    PathList out;
    const DirLinkId up = *t.find_dir_link(g, a), down = *t.find_dir_link(b, d);
    std::vector<NodeId> nodes;
    std::vector<DirLinkId> links;
    for (size_t i = 0; i < it->second.size(); ++i) {
      nodes.assign(1, g);
      links.assign(1, up);
      const auto fn = it->second.nodes(i);
      const auto fl = it->second.links(i);
      nodes.insert(nodes.end(), fn.begin(), fn.end());
      links.insert(links.end(), fl.begin(), fl.end());
      nodes.push_back(d);
      links.push_back(down);
      out.add(nodes, links);
    }
    return out;
  }

  config::Policy base_policy(std::string name, NodeId d) const {
    config::Policy p;
    p.name = std::move(name);
    p.color = opt.color;
    p.endpoint = net::IpAddr::v6(design().node(d).gateway.source);
    p.encap = opt.segments.encap;
    p.usid = opt.segments.usid;
    p.selection = opt.selection;
    p.flowlet_gap_us = opt.flowlet_gap_us;
    if (opt.probe && design().node(d).gateway.probe_sid)
      p.probe_sid = design().node(d).gateway.probe_sid;
    return p;
  }

  // The multipath policy toward d with ids from `base`; pinned policies toward d for `pins`
  // (all from g to d). Appends to `out`.
  void build_destination(NodeId g, NodeId d, uint32_t rule_id, uint32_t base,
                         std::span<const Pin* const> pins, GatewayPlan& out) {
    const Topology& t = design();
    const std::string pname = policy_name(t, d);
    const PathList primaries = cache.between(g, d);
    if (primaries.empty()) {
      out.unreachable.push_back(pname + ": no path in the design");
      return;
    }
    const PathList backups = backups_for(g, d, primaries);
    const std::vector<uint32_t> weights = capacity_weights(state, primaries);
    config::Policy policy = base_policy(pname, d);
    std::unordered_set<std::string> names;
    std::vector<std::string> primary_names(primaries.size());
    std::vector<std::vector<net::Ipv6Addr>> primary_sids(primaries.size());
    bool any_active = false;
    std::string error;
    auto add_list = [&](const PathList& list, size_t i, uint32_t path_id, bool backup,
                        uint32_t weight, std::string& name_out,
                        std::vector<net::Ipv6Addr>& sids_out) -> bool {
      const auto nodes = list.nodes(i);
      if (!build_sids(cache, nodes, opt.segments, sids_out, &error)) return false;
      name_out = list_name(t, nodes, i, names);
      names.insert(name_out);
      if (weight == 0 && !opt.keep_down_paths) return true;
      if (path_id > config::kMaxPathId) {
        error = "path ids exhausted (more than " + std::to_string(config::kMaxPathId) +
                " paths for one gateway)";
        return false;
      }
      config::SegmentList sl;
      sl.name = name_out;
      sl.path_id = uint16_t(path_id);
      sl.weight = weight;
      sl.backup = backup;
      sl.sids = sids_out;
      policy.segment_lists.push_back(std::move(sl));
      PlannedPath pp;
      pp.policy = pname;
      pp.segment_list = name_out;
      pp.path_id = uint16_t(path_id);
      pp.dst = d;
      pp.backup = backup;
      pp.nodes.assign(nodes.begin(), nodes.end());
      const auto links = list.links(i);
      pp.links.assign(links.begin(), links.end());
      out.paths.push_back(std::move(pp));
      return true;
    };
    const size_t n = std::min<size_t>(primaries.size(), opt.max_paths);
    for (size_t i = 0; i < n; ++i) {
      if (!add_list(primaries, i, base + uint32_t(i), false, weights[i], primary_names[i],
                    primary_sids[i])) {
        out.unreachable.push_back(pname + ": " + error);
        out.paths.resize(out.paths.size() - policy.segment_lists.size());
        return;
      }
      any_active |= weights[i] > 0;
    }
    if (!any_active) {
      out.paths.resize(out.paths.size() - policy.segment_lists.size());
      out.unreachable.push_back(pname + ": every path is down");
      return;
    }
    for (size_t i = 0; i < backups.size() && i < opt.backups; ++i) {
      std::string name;
      std::vector<net::Ipv6Addr> sids;
      const uint32_t w = usable(state, backups.links(i)) ? 1 : 0;
      if (!add_list(backups, i, base + uint32_t(n + i), true, w, name, sids)) {
        // A backup that cannot be expressed (a switch without SID) is left out.
        continue;
      }
    }
    out.policies.push_back(std::move(policy));
    config::SteeringRule dest;
    dest.kind = config::SteeringKind::dst_any_qp;
    dest.dst = t.node(d).address;
    dest.policy = pname;
    dest.id = rule_id;
    out.steering.push_back(dest);

    // Pinned flows toward d.
    if (pins.empty()) return;
    std::map<size_t, std::vector<const Pin*>> by_path;  // primary index -> pins
    for (const Pin* pin : pins) {
      size_t found = SIZE_MAX;
      for (size_t i = 0; i < n && found == SIZE_MAX; ++i) {
        const auto nodes = primaries.nodes(i);
        if (std::equal(nodes.begin(), nodes.end(), pin->path.begin(), pin->path.end())) found = i;
      }
      config::SteeringRule r;
      r.kind = config::SteeringKind::exact;
      r.dst = t.node(d).address;
      r.dest_qp = pin->dest_qp;
      const auto rid = books.rule_ids.id(cat(t.node(d).name, "/", std::to_string(pin->dest_qp)));
      if (!rid) continue;
      r.id = *rid;
      if (found == SIZE_MAX || weights[found] == 0) {
        r.policy = pname;  // path unknown or down: the multipath policy carries the flow
        out.steering.push_back(r);
        continue;
      }
      r.policy = cat(pname, ":", primary_names[found]);
      if (r.policy.size() > 64) r.policy = cat(pname, ":p", std::to_string(found));
      out.steering.push_back(r);
      by_path[found].push_back(pin);
    }
    for (const auto& [i, list] : by_path) {
      const std::string name = cat(pname, ":", primary_names[i]).size() > 64
                                   ? cat(pname, ":p", std::to_string(i))
                                   : cat(pname, ":", primary_names[i]);
      config::Policy pinned = base_policy(name, d);
      auto add = [&](size_t k, bool backup, uint32_t weight) -> bool {
        const std::string key = cat(name, "|", path_key(t, primaries.nodes(k)));
        const auto id = books.path_ids.id(key);
        if (!id) return false;
        config::SegmentList sl;
        sl.name = primary_names[k];
        sl.path_id = uint16_t(*id);
        sl.weight = weight;
        sl.backup = backup;
        sl.sids = primary_sids[k];
        pinned.segment_lists.push_back(std::move(sl));
        PlannedPath pp;
        pp.policy = name;
        pp.segment_list = primary_names[k];
        pp.path_id = uint16_t(*id);
        pp.dst = d;
        pp.backup = backup;
        pp.pinned = true;
        const auto nodes = primaries.nodes(k);
        const auto links = primaries.links(k);
        pp.nodes.assign(nodes.begin(), nodes.end());
        pp.links.assign(links.begin(), links.end());
        out.paths.push_back(std::move(pp));
        return true;
      };
      if (!add(i, false, 1)) {
        out.unreachable.push_back(name + ": path ids exhausted");
        continue;
      }
      // The next usable paths after the pinned one (rotating) as backups.
      unsigned added = 0;
      for (size_t s = 1; s < n && added < opt.pinned_backups; ++s) {
        const size_t k = (i + s) % n;
        if (weights[k] == 0) continue;
        if (add(k, true, weights[k])) ++added;
      }
      out.policies.push_back(std::move(pinned));
    }
  }

  std::vector<config::LocalSid> local_sids(NodeId g) const {
    const Gateway& gw = design().node(g).gateway;
    std::vector<config::LocalSid> l;
    l.push_back({gw.decap_sid, gw.decap_behavior});
    if (gw.usid && *gw.usid != gw.decap_sid)
      l.push_back({*gw.usid, srv6::LocalSidBehavior::end_dt46});
    if (gw.probe_sid) l.push_back({*gw.probe_sid, srv6::LocalSidBehavior::end_probe});
    std::sort(l.begin(), l.end(), [](const auto& a, const auto& b) { return a.sid < b.sid; });
    return l;
  }
};

void sort_plan(GatewayPlan& p) {
  std::sort(p.policies.begin(), p.policies.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  std::sort(p.steering.begin(), p.steering.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  std::sort(p.paths.begin(), p.paths.end(),
            [](const auto& a, const auto& b) { return a.path_id < b.path_id; });
}

// Design id bases of every destination of g (indexed by host position), and the first id
// above the design range.
std::vector<uint32_t> design_bases(const Builder& b, NodeId g, uint32_t& end) {
  const auto& hosts = b.design().hosts();
  std::vector<uint32_t> base(hosts.size(), 0);
  uint32_t next = 1;
  for (size_t j = 0; j < hosts.size(); ++j) {
    if (hosts[j] == g) continue;
    base[j] = next;
    next += b.slots(g, hosts[j]);
  }
  end = next;
  return base;
}

std::unordered_map<NodeId, std::vector<const Pin*>> pins_by_dst(std::span<const Pin> pins) {
  std::unordered_map<NodeId, std::vector<const Pin*>> m;
  for (const Pin& p : pins) m[p.dst].push_back(&p);
  return m;
}

}  // namespace

GatewayPlan plan_gateway(const PathCache& cache, NodeId gateway, const PlanOptions& opt,
                         GatewayBooks& books, std::span<const Pin> pins) {
  Builder b{cache, cache.topology(), opt, books};
  GatewayPlan plan;
  plan.gateway = gateway;
  uint32_t end = 0;
  const auto base = design_bases(b, gateway, end);
  if (books.path_ids.size() == 0) books.path_ids.set_first(end);
  const auto by_dst = pins_by_dst(pins);
  const auto& hosts = cache.topology().hosts();
  for (size_t j = 0; j < hosts.size(); ++j) {
    if (hosts[j] == gateway) continue;
    auto it = by_dst.find(hosts[j]);
    std::span<const Pin* const> p;
    if (it != by_dst.end()) p = it->second;
    b.build_destination(gateway, hosts[j], uint32_t(j + 1), base[j], p, plan);
  }
  plan.local_sids = b.local_sids(gateway);
  sort_plan(plan);
  return plan;
}

// ---- Planner -------------------------------------------------------------------------------

struct Planner::State {
  std::unordered_map<NodeId, GatewayBooks> books;
  std::unordered_map<NodeId, std::vector<uint32_t>> bases;  // design id bases per gateway
  std::unordered_map<NodeId, uint32_t> design_end;
  std::unordered_map<NodeId, std::vector<Pin>> pins;
  std::unordered_map<uint64_t, PathList> backups;
  // Per attachment-switch pair: every directed link its paths (and backups) cross.
  // Per attachment-switch pair: the links its primary paths cross, and its backups'.
  struct PairLinks {
    std::vector<DirLinkId> primary, backup;
  };
  std::unordered_map<uint64_t, PairLinks> pair_links;
};

Planner::Planner(Topology topology, PlanOptions options)
    : topo_(std::move(topology)), opt_(options), state_(std::make_unique<State>()) {
  PathOptions po;
  po.max_paths = opt_.max_paths;
  cache_ = std::make_unique<PathCache>(topo_, po);
}

Planner::~Planner() = default;

GatewayBooks& Planner::books(NodeId gateway) {
  return state_->books[gateway];
}

void Planner::set_pins(std::vector<Pin> pins) {
  state_->pins.clear();
  for (Pin& p : pins) state_->pins[p.src].push_back(std::move(p));
}

std::span<const Pin> Planner::pins(NodeId gateway) const {
  auto it = state_->pins.find(gateway);
  if (it == state_->pins.end()) return {};
  return it->second;
}

GatewayPlan Planner::plan(NodeId gateway) {
  GatewayBooks& books = state_->books[gateway];
  Builder b{*cache_, topo_, opt_, books, &state_->backups};
  auto& base = state_->bases[gateway];
  if (base.empty()) {
    uint32_t end = 0;
    base = design_bases(b, gateway, end);
    state_->design_end[gateway] = end;
    books.path_ids.set_first(end);
  }
  GatewayPlan plan;
  plan.gateway = gateway;
  const auto by_dst = pins_by_dst(pins(gateway));
  const auto& hosts = topo_.hosts();
  for (size_t j = 0; j < hosts.size(); ++j) {
    if (hosts[j] == gateway) continue;
    auto it = by_dst.find(hosts[j]);
    std::span<const Pin* const> p;
    if (it != by_dst.end()) p = it->second;
    b.build_destination(gateway, hosts[j], uint32_t(j + 1), base[j], p, plan);
  }
  plan.local_sids = b.local_sids(gateway);
  sort_plan(plan);
  return plan;
}

bool Planner::update_links(std::span<const LinkChange> changes, std::vector<GatewayChange>& out,
                           std::string* error) {
  out.clear();
  for (const LinkChange& c : changes) {
    if (c.link >= topo_.link_count()) {
      if (error) *error = "unknown link " + std::to_string(c.link);
      return false;
    }
    if (c.members_up > topo_.link(c.link).members) {
      if (error) {
        *error = topo_.link_name(c.link) + ": members-up " + std::to_string(c.members_up) +
                 " exceeds its " + std::to_string(topo_.link(c.link).members) + " members";
      }
      return false;
    }
  }
  // The state before, then the state after (same nodes and links: only states differ).
  Topology before = topo_;
  // changed: capacity in force differs (primary weights); flipped: usable <-> not (what a
  // backup list's weight depends on).
  std::unordered_set<LinkId> changed, flipped;
  for (const LinkChange& c : changes) {
    const Link old = topo_.link(c.link);
    topo_.apply(c);
    const Link& now = topo_.link(c.link);
    if (old.capacity_mbps() != now.capacity_mbps()) changed.insert(c.link);
    if ((old.capacity_mbps() == 0) != (now.capacity_mbps() == 0)) flipped.insert(c.link);
  }
  if (changed.empty()) return true;

  // Affected (gateway, destination) pairs.
  const auto& hosts = topo_.hosts();
  std::vector<size_t> host_pos(topo_.node_count(), SIZE_MAX);
  for (size_t j = 0; j < hosts.size(); ++j) host_pos[hosts[j]] = j;
  std::unordered_map<NodeId, std::vector<NodeId>> attached;  // switch -> single-homed hosts
  std::vector<NodeId> multi_homed;
  for (NodeId h : hosts) {
    const NodeId a = sole_attachment(topo_, h);
    if (a == kNoNode) {
      multi_homed.push_back(h);
    } else {
      attached[a].push_back(h);
    }
  }
  std::map<NodeId, std::set<NodeId>> affected;  // gateway -> destinations
  auto mark_all_of = [&](NodeId h) {
    for (NodeId d : hosts) {
      if (d == h) continue;
      affected[h].insert(d);
      affected[d].insert(h);
    }
  };
  for (LinkId l : changed) {
    const Link& k = topo_.link(l);
    if (topo_.node(k.a).is_host()) mark_all_of(k.a);
    if (topo_.node(k.b).is_host()) mark_all_of(k.b);
  }
  for (NodeId h : multi_homed) mark_all_of(h);  // rare: recompute them whole
  Builder probe{*cache_, topo_, opt_, state_->books[hosts.empty() ? 0 : hosts[0]],
                &state_->backups};
  for (const auto& [a, srcs] : attached) {
    for (const auto& [b, dsts] : attached) {
      if (a == b) continue;
      const uint64_t key = uint64_t(a) << 32 | b;
      auto it = state_->pair_links.find(key);
      if (it == state_->pair_links.end()) {
        State::PairLinks links;
        const PathList fabric = cache_->between(a, b);
        for (size_t i = 0; i < fabric.size(); ++i) {
          for (DirLinkId d : fabric.links(i)) links.primary.push_back(d);
        }
        if (opt_.backups) {
          // Backups of this pair, through one representative host pair.
          const PathList hp = cache_->between(srcs.front(), dsts.front());
          const PathList bk = probe.backups_for(srcs.front(), dsts.front(), hp);
          for (size_t i = 0; i < bk.size(); ++i) {
            for (DirLinkId d : bk.links(i)) links.backup.push_back(d);
          }
        }
        for (auto* v : {&links.primary, &links.backup}) {
          std::sort(v->begin(), v->end());
          v->erase(std::unique(v->begin(), v->end()), v->end());
        }
        it = state_->pair_links.emplace(key, std::move(links)).first;
      }
      bool hit = false;
      for (DirLinkId d : it->second.primary) hit |= changed.count(link_of(d)) > 0;
      for (DirLinkId d : it->second.backup) hit |= flipped.count(link_of(d)) > 0;
      if (!hit) continue;
      for (NodeId g : srcs) {
        for (NodeId d : dsts) affected[g].insert(d);
      }
    }
  }

  for (const auto& [g, dsts] : affected) {
    GatewayBooks& books = state_->books[g];
    auto& base = state_->bases[g];
    Builder after{*cache_, topo_, opt_, books, &state_->backups};
    Builder prior{*cache_, before, opt_, books, &state_->backups};
    if (base.empty()) {
      uint32_t end = 0;
      base = design_bases(after, g, end);
      state_->design_end[g] = end;
      books.path_ids.set_first(end);
    }
    const auto by_dst = pins_by_dst(pins(g));
    GatewayPlan old_plan, new_plan;
    for (NodeId d : dsts) {
      auto it = by_dst.find(d);
      std::span<const Pin* const> p;
      if (it != by_dst.end()) p = it->second;
      const size_t j = host_pos[d];
      prior.build_destination(g, d, uint32_t(j + 1), base[j], p, old_plan);
      after.build_destination(g, d, uint32_t(j + 1), base[j], p, new_plan);
    }
    sort_plan(old_plan);
    sort_plan(new_plan);
    PlanDiff dd = diff(old_plan, new_plan);
    if (!dd.empty()) out.push_back(GatewayChange{g, std::move(dd)});
  }
  return true;
}

std::vector<NodeId> Planner::gateways_using(LinkId link) const {
  std::vector<NodeId> out;
  const Link& k = topo_.link(link);
  if (topo_.node(k.a).is_host() || topo_.node(k.b).is_host()) return topo_.hosts();
  std::set<NodeId> users;
  const auto& hosts = topo_.hosts();
  for (NodeId g : hosts) {
    const NodeId a = sole_attachment(topo_, g);
    bool uses = false;
    for (NodeId d : hosts) {
      if (d == g || uses) continue;
      const NodeId b = sole_attachment(topo_, d);
      PathList p;
      if (a != kNoNode && b != kNoNode && a != b) {
        p = cache_->between(a, b);
      } else {
        p = cache_->between(g, d);
      }
      for (size_t i = 0; i < p.size() && !uses; ++i) {
        for (DirLinkId x : p.links(i)) uses |= link_of(x) == link;
      }
    }
    if (uses) out.push_back(g);
  }
  return out;
}

}  // namespace srv6gw::pathalg
