// SPDX-License-Identifier: BSD-3-Clause
// One gateway's plan from the design's paths and the link states in force: policies (names,
// weights, backup and pinned lists, path ids), steering rules and local SIDs (plan.hpp says
// what each holds and how ids are given).
#include "pathalg/plan_builder.hpp"

#include <algorithm>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "pathalg/cat.hpp"

namespace srv6gw::pathalg {

namespace plan_detail {

namespace {

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

}  // namespace

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

uint32_t Builder::slots(NodeId g, NodeId d) const {
  const uint32_t n = cache.shortest_path_count(g, d);
  return std::min({n, uint32_t(opt.max_paths), uint32_t(cache.options().max_paths)}) + opt.backups;
}

PathList Builder::backups_for(NodeId g, NodeId d, const PathList& primaries) {
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

config::Policy Builder::base_policy(std::string name, NodeId d) const {
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

void Builder::build_destination(NodeId g, NodeId d, uint32_t rule_id, uint32_t base,
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

std::vector<config::LocalSid> Builder::local_sids(NodeId g) const {
  const Gateway& gw = design().node(g).gateway;
  std::vector<config::LocalSid> l;
  l.push_back({gw.decap_sid, gw.decap_behavior});
  if (gw.usid && *gw.usid != gw.decap_sid)
    l.push_back({*gw.usid, srv6::LocalSidBehavior::end_dt46});
  if (gw.probe_sid) l.push_back({*gw.probe_sid, srv6::LocalSidBehavior::end_probe});
  std::sort(l.begin(), l.end(), [](const auto& a, const auto& b) { return a.sid < b.sid; });
  return l;
}

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

}  // namespace plan_detail

using namespace plan_detail;

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

}  // namespace srv6gw::pathalg
