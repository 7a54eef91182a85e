// SPDX-License-Identifier: BSD-3-Clause
// The Planner (plan.hpp): every gateway's books and pins, plans on demand, and after link
// changes the gateways whose plans change with their diffs (recomputing only the policies
// whose paths cross a changed link).
#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "pathalg/plan.hpp"
#include "pathalg/plan_builder.hpp"

namespace srv6gw::pathalg {

using namespace plan_detail;

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
