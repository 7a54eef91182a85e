// SPDX-License-Identifier: BSD-3-Clause
#include "pathalg_fabric.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <variant>

#include "pathalg/loader.hpp"
#include "pathalg/paths.hpp"
#include "pathalg/placement.hpp"
#include "pathalg/plan.hpp"
#include "pathalg/segments.hpp"
#include "pathalg/topology.hpp"

namespace srv6gw::fabricsim {

namespace pa = srv6gw::pathalg;

namespace {

std::vector<unsigned> numbers(const std::string& spec, size_t from) {
  std::vector<unsigned> v;
  size_t i = from;
  while (i < spec.size()) {
    size_t end = spec.find(',', i);
    if (end == std::string::npos) end = spec.size();
    v.push_back(unsigned(std::stoul(spec.substr(i, end - i))));
    i = end + 1;
  }
  return v;
}

// A topology file, or one of lib/pathalg's generators:
//   gen:leafspine:LEAVES,SPINES,HOSTS_PER_LEAF,LAG_MEMBERS,MEMBER_GBPS,HOST_GBPS
//   gen:fattree:K,MEMBER_GBPS
pa::Topology load(const std::string& file) {
  if (file.rfind("gen:leafspine:", 0) == 0) {
    const auto n = numbers(file, 14);
    if (n.size() != 6) throw std::runtime_error(file + ": expected 6 numbers");
    pa::LeafSpineSpec s;
    s.leaves = n[0];
    s.spines = n[1];
    s.hosts_per_leaf = n[2];
    s.lag_members = uint16_t(n[3]);
    s.member_mbps = uint64_t(n[4]) * 1000;
    s.host_mbps = uint64_t(n[5]) * 1000;
    return pa::make_leaf_spine(s);
  }
  if (file.rfind("gen:fattree:", 0) == 0) {
    const auto n = numbers(file, 12);
    if (n.size() != 2) throw std::runtime_error(file + ": expected 2 numbers");
    pa::FatTreeSpec s;
    s.k = n[0];
    s.member_mbps = uint64_t(n[1]) * 1000;
    s.host_mbps = s.member_mbps;
    return pa::make_fat_tree(s);
  }
  pa::TopologyResult r = pa::load_topology_file(file);
  if (auto* err = std::get_if<pa::TopologyError>(&r))
    throw std::runtime_error(file + ": " + err->path + ": " + err->message);
  return std::get<pa::Topology>(std::move(r));
}

// Finds a link by the name pathalg gives it ("leaf1--spine3", either orientation).
pa::LinkId find_link(const pa::Topology& t, const std::string& name) {
  for (pa::LinkId l = 0; l < t.link_count(); ++l) {
    if (t.link_name(l) == name) return l;
    const auto& k = t.link(l);
    if (t.node(k.b).name + "--" + t.node(k.a).name == name) return l;
  }
  throw std::runtime_error("--degrade: no link named '" + name +
                           "' (fabricsim links --topology FILE lists them)");
}

// A change as the path algorithm module takes it: whole LAG members where the factor is a
// whole number of members (a member down), a capacity override otherwise.
void apply(pa::Topology& t, std::span<const LinkChange> changes) {
  for (const LinkChange& c : changes) {
    const pa::LinkId l = find_link(t, c.link);
    const pa::Link& k = t.link(l);
    pa::LinkChange ch;
    ch.link = l;
    ch.state = c.factor > 0 ? pa::LinkState::up : pa::LinkState::down;
    ch.members_up = k.members;
    const double members = c.factor * k.members;
    if (c.factor > 0 && std::fabs(members - std::round(members)) < 1e-9)
      ch.members_up = uint16_t(std::lround(members));
    else if (c.factor > 0)
      ch.capacity_override_mbps = uint64_t(std::llround(double(k.design_mbps()) * c.factor));
    std::string error;
    if (!t.apply(ch, &error)) throw std::runtime_error("--degrade " + c.link + ": " + error);
  }
}

class PathalgFabric : public SimFabric {
 public:
  PathalgFabric(const std::string& file, std::span<const LinkChange> plan_changes,
                std::span<const LinkChange> run_changes, const FabricOptions& opt)
      : plan_(load(file)), run_(load(file)) {
    apply(plan_, plan_changes);
    apply(run_, run_changes);
    cache_ = std::make_unique<pa::PathCache>(plan_);
    // Sim link = pathalg's directed link id.
    const size_t n_dir = run_.link_count() * 2;
    for (pa::DirLinkId d = 0; d < n_dir; ++d) {
      const bool access = run_.node(run_.from(d)).is_host() || run_.node(run_.to(d)).is_host();
      const double bps = double(run_.capacity_mbps(d)) * 1e6;
      links_.name.push_back(run_.dir_link_name(d));
      links_.capacity_bps.push_back(access ? bps : bps * opt.fabric_payload_fraction);
      const double design_bps = double(run_.link(pa::link_of(d)).design_mbps()) * 1e6;
      links_.latency_s.push_back(opt.hop_latency_s + opt.frame_bytes * 8.0 / design_bps);
    }
    for (pa::NodeId h : run_.hosts()) {
      hosts_.push_back({run_.node(h).name, run_.node(h).address});
      host_node_.push_back(h);
      for (const pa::Adjacency& a : run_.neighbours(h))
        nic_ = std::max(nic_, double(run_.link(pa::link_of(a.out)).design_mbps()) * 1e6);
    }
    paths_.resize(hosts_.size() * hosts_.size());
    filled_.assign(paths_.size(), 0);
  }

  const SimLinks& links() const override { return links_; }
  const std::vector<SimHost>& hosts() const override { return hosts_; }
  double nic_bps() const override { return nic_; }

  std::span<const SimPath> paths(uint32_t src, uint32_t dst) const override {
    const size_t k = size_t(src) * hosts_.size() + dst;
    if (!filled_[k]) {
      fill(src, dst, paths_[k]);
      filled_[k] = 1;
    }
    return paths_[k];
  }

  std::vector<uint32_t> place(std::span<const Demand> demands) const override {
    std::vector<pa::Flow> flows;
    flows.reserve(demands.size());
    for (const Demand& d : demands)
      flows.push_back(
          {host_node_[d.src], host_node_[d.dst], d.qp, uint64_t(std::llround(d.bytes))});
    pa::PlacementOptions opt;
    // The 128-GPU AlltoAll has 16k flows: far beyond what branch and bound proves; the
    // module's heuristic (largest-first, then improvement) is what it would run.
    opt.exact = flows.size() <= 64;
    const pa::Placement p = pa::place(*cache_, flows, opt);
    last_placement_max_load_s_ = p.max_load_s;
    last_placement_lower_bound_s_ = p.lower_bound_s;
    for (uint32_t i = 0; i < p.path_of.size(); ++i)
      if (p.path_of[i] == pa::kNoPath)
        throw std::runtime_error("placement: no usable path for flow " + std::to_string(i));
    return p.path_of;
  }

 private:
  void fill(uint32_t src, uint32_t dst, std::vector<SimPath>& out) const {
    const pa::PathList list = cache_->between(host_node_[src], host_node_[dst]);
    // The weights the module's plan gives the policy's segment lists (capacity-proportional).
    const std::vector<uint32_t> w = pa::capacity_weights(plan_, list);
    pa::SegmentOptions sopt;
    for (size_t i = 0; i < list.size(); ++i) {
      SimPath p;
      for (pa::DirLinkId d : list.links(i)) p.links.push_back(d);
      p.weight = double(w[i]);
      std::string err;
      if (!pa::build_sids(*cache_, list.nodes(i), sopt, p.sids, &err))
        throw std::runtime_error("segment list: " + err);
      p.path_id = uint32_t(i + 1);
      out.push_back(std::move(p));
    }
  }

  pa::Topology plan_, run_;
  std::unique_ptr<pa::PathCache> cache_;
  SimLinks links_;
  std::vector<SimHost> hosts_;
  std::vector<pa::NodeId> host_node_;
  double nic_ = 0;
  mutable std::vector<std::vector<SimPath>> paths_;
  mutable std::vector<uint8_t> filled_;
  mutable double last_placement_max_load_s_ = 0;
  mutable double last_placement_lower_bound_s_ = 0;
};

}  // namespace

std::unique_ptr<SimFabric> make_pathalg_fabric(const std::string& topology_file,
                                               std::span<const LinkChange> plan_changes,
                                               std::span<const LinkChange> run_changes,
                                               const FabricOptions& options) {
  return std::make_unique<PathalgFabric>(topology_file, plan_changes, run_changes, options);
}

std::vector<std::string> pathalg_link_names(const std::string& topology_file) {
  const pa::Topology t = load(topology_file);
  std::vector<std::string> out;
  for (pa::LinkId l = 0; l < t.link_count(); ++l) out.push_back(t.link_name(l));
  return out;
}

}  // namespace srv6gw::fabricsim
