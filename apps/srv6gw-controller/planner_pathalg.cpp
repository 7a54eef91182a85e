// SPDX-License-Identifier: BSD-3-Clause
// The controller's Planner over lib/pathalg: one pathalg::Planner for the controller's life
// (its id books keep path and rule ids stable across recomputations), link states applied
// to it as they change, jobs placed once, plans converted to srv6gw.v1 objects with the
// module's Apply adapter.
#include <fstream>
#include <sstream>

#include "agent/convert.hpp"
#include "pathalg/placement.hpp"
#include "pathalg/plan.hpp"
#include "planner_pathalg.hpp"

namespace srv6gw::sr_controller {
namespace {

namespace pa = ::srv6gw::pathalg;

class TopologyPlanner final : public Planner {
 public:
  TopologyPlanner(pa::Topology topo, std::string version)
      : version_(std::move(version)), planner_(std::move(topo), options()) {
    const auto& t = planner_.topology();
    for (pa::LinkId l = 0; l < t.link_count(); ++l) link_ids_[t.link_name(l)] = l;
  }

  static pa::PlanOptions options() {
    pa::PlanOptions o;
    o.keep_down_paths = true;  // a path over a dead link stays (weight 0): still probed
    o.probe = true;
    return o;
  }

  std::string topology_version() const override { return version_; }

  std::vector<std::string> gateways() const override {
    std::vector<std::string> out;
    const auto& t = planner_.topology();
    for (pa::NodeId h : t.hosts()) out.push_back(t.node(h).name);
    return out;
  }

  std::map<std::string, std::string> agents() const override {
    std::map<std::string, std::string> out;
    const auto& t = planner_.topology();
    for (pa::NodeId h : t.hosts()) out[t.node(h).name] = t.node(h).gateway.agent;
    return out;
  }

  std::map<std::string, LinkState> links() const override {
    std::map<std::string, LinkState> out;
    const auto& t = planner_.topology();
    for (pa::LinkId l = 0; l < t.link_count(); ++l) {
      const auto& link = t.link(l);
      // The file's state (as loaded): design capacity unless the file degrades it.
      LinkState s;
      s.up = initial_.empty() ? link.state == pa::LinkState::up : initial_.at(l).up;
      s.capacity_gbps =
          initial_.empty()
              ? double(link.capacity_mbps() ? link.capacity_mbps() : link.design_mbps()) / 1000.0
              : initial_.at(l).capacity_gbps;
      out[t.link_name(l)] = s;
    }
    return out;
  }

  std::set<std::string> access_links() const override {
    std::set<std::string> out;
    const auto& t = planner_.topology();
    for (pa::LinkId l = 0; l < t.link_count(); ++l) {
      if (t.node(t.link(l).a).is_host() || t.node(t.link(l).b).is_host()) {
        out.insert(t.link_name(l));
      }
    }
    return out;
  }

  std::string check_job(const cv1::SubmitJobRequest& job) const override {
    if (job.flows().empty()) return "flows: a job needs at least one flow";
    const auto& t = planner_.topology();
    for (int i = 0; i < job.flows_size(); ++i) {
      const auto& f = job.flows(i);
      const std::string where = "flows[" + std::to_string(i) + "]";
      auto s = t.find_node(f.src_host());
      auto d = t.find_node(f.dst_host());
      if (!s || !t.node(*s).is_host()) return where + ".src_host: no host '" + f.src_host() + "'";
      if (!d || !t.node(*d).is_host()) return where + ".dst_host: no host '" + f.dst_host() + "'";
      if (*s == *d) return where + ": source and destination are the same host";
      if (f.dest_qp() > 0xffffff) return where + ".dest_qp: must fit 24 bits";
    }
    return "";
  }

  bool compute(const std::map<std::string, LinkState>& links,
               const std::vector<cv1::SubmitJobRequest>& jobs,
               const std::map<std::string, bool>& probe, PlanOutput& out,
               std::string& error) override {
    if (initial_.empty()) initial_snapshot();
    if (!apply_links(links, error)) return false;
    if (!place_jobs(jobs, error)) return false;
    const auto& t = planner_.topology();
    out = PlanOutput{};
    for (pa::NodeId g : t.hosts()) {
      const std::string gname = t.node(g).name;
      pa::GatewayPlan plan = planner_.plan(g);
      auto probe_it = probe.find(gname);
      const bool strip_probe = probe_it != probe.end() && !probe_it->second;
      // The gateway's own model -> srv6gw.v1 with the agent's conversion (what ListPolicies
      // would return for it).
      GatewayState& state = out.gateways[gname];
      std::set<std::string> probed_policies;
      for (const auto& pol : plan.policies) {
        v1::SrPolicy p;
        agent::to_proto(pol, p);
        if (strip_probe) p.clear_probe_sid();
        if (!p.probe_sid().empty()) probed_policies.insert(p.name());
        state.add(std::move(p));
      }
      for (const auto& rule : plan.steering) {
        v1::SteeringRule r;
        agent::to_proto(rule, r);
        state.add(std::move(r));
      }
      for (const auto& sid : plan.local_sids) {
        v1::LocalSid l;
        agent::to_proto(sid, l);
        state.add(std::move(l));
      }
      for (const auto& pp : plan.paths) {
        PlannedPath p;
        p.gateway = gname;
        p.policy = pp.policy;
        p.segment_list = pp.segment_list;
        p.path_id = pp.path_id;
        p.probed = probed_policies.count(pp.policy) > 0;
        std::set<pa::LinkId> seen;
        for (pa::DirLinkId d : pp.links) {
          if (seen.insert(pa::link_of(d)).second) p.links.push_back(t.link_name(pa::link_of(d)));
        }
        out.paths.push_back(std::move(p));
      }
    }
    for (const auto& job : jobs) out.jobs[job.job_id()] = summary(job, out);
    return true;
  }

 private:
  struct PlacedJob {
    std::vector<pa::Flow> flows;
    pa::Placement placement;
    std::vector<pa::Pin> pins;
  };

  void initial_snapshot() {
    const auto& t = planner_.topology();
    initial_.clear();
    for (pa::LinkId l = 0; l < t.link_count(); ++l) {
      const auto& link = t.link(l);
      LinkState s;
      s.up = link.state == pa::LinkState::up;
      const uint64_t mbps = link.state == pa::LinkState::up ? link.capacity_mbps()
                            : link.capacity_override_mbps
                                ? *link.capacity_override_mbps
                                : uint64_t(link.members_up) * link.member_mbps;
      s.capacity_gbps = double(mbps) / 1000.0;
      initial_[l] = s;
    }
  }

  // Brings the module's link states to `links`: state and capacity (a capacity below the
  // design's is an override; members are left as the file says).
  bool apply_links(const std::map<std::string, LinkState>& links, std::string& error) {
    const auto& t = planner_.topology();
    std::vector<pa::LinkChange> changes;
    for (const auto& [name, want] : links) {
      auto it = link_ids_.find(name);
      if (it == link_ids_.end()) {
        error = "link '" + name + "' is not in the topology";
        return false;
      }
      const auto& link = t.link(it->second);
      pa::LinkChange c;
      c.link = it->second;
      c.state = want.up ? pa::LinkState::up : pa::LinkState::down;
      c.members_up = link.members_up;
      const uint64_t want_mbps = uint64_t(want.capacity_gbps * 1000.0 + 0.5);
      const uint64_t natural = uint64_t(link.members_up) * link.member_mbps;
      if (want_mbps != natural) c.capacity_override_mbps = want_mbps;
      const bool same_state = link.state == c.state;
      const bool same_cap = link.capacity_override_mbps == c.capacity_override_mbps;
      if (!same_state || !same_cap) changes.push_back(c);
    }
    if (changes.empty()) return true;
    std::vector<pa::GatewayChange> ignored;  // the reconciler diffs against the gateways
    return planner_.update_links(changes, ignored, &error);
  }

  bool place_jobs(const std::vector<cv1::SubmitJobRequest>& jobs, std::string& error) {
    const auto& t = planner_.topology();
    std::set<std::string> present;
    bool changed = false;
    for (const auto& job : jobs) {
      present.insert(job.job_id());
      if (placed_.count(job.job_id())) continue;
      PlacedJob pj;
      for (int i = 0; i < job.flows_size(); ++i) {
        const auto& f = job.flows(i);
        auto s = t.find_node(f.src_host());
        auto d = t.find_node(f.dst_host());
        if (!s || !d) {
          error = "job " + job.job_id() + " flows[" + std::to_string(i) + "]: unknown host";
          return false;
        }
        pj.flows.push_back({*s, *d, f.dest_qp(), f.bytes()});
      }
      pj.placement = pa::place(planner_.paths(), pj.flows);
      pj.pins = pa::pins_from(planner_.paths(), pj.flows, pj.placement);
      placed_[job.job_id()] = std::move(pj);
      order_.push_back(job.job_id());
      changed = true;
    }
    for (auto it = order_.begin(); it != order_.end();) {
      if (!present.count(*it)) {
        placed_.erase(*it);
        it = order_.erase(it);
        changed = true;
      } else {
        ++it;
      }
    }
    if (changed) {
      std::vector<pa::Pin> all;
      for (const auto& id : order_) {
        const auto& pins = placed_.at(id).pins;
        all.insert(all.end(), pins.begin(), pins.end());
      }
      planner_.set_pins(std::move(all));
    }
    return true;
  }

  cv1::JobSummary summary(const cv1::SubmitJobRequest& job, const PlanOutput& out) const {
    const auto& t = planner_.topology();
    cv1::JobSummary s;
    s.set_job_id(job.job_id());
    s.set_flows(uint32_t(job.flows_size()));
    auto it = placed_.find(job.job_id());
    if (it == placed_.end()) return s;
    const PlacedJob& pj = it->second;
    s.set_max_link_load(pj.placement.max_load_s);
    s.set_lower_bound(pj.placement.lower_bound_s);
    for (int i = 0; i < job.flows_size(); ++i) {
      auto* fp = s.add_placements();
      *fp->mutable_flow() = job.flows(i);
      fp->set_gateway(job.flows(i).src_host());
      // The exact rule the plan holds for (destination, DestQP), and its policy's active path.
      auto g = out.gateways.find(job.flows(i).src_host());
      if (g == out.gateways.end()) continue;
      const std::string dst = net::to_string(t.node(pj.flows[size_t(i)].dst).address);
      for (const auto& [id, rule] : g->second.steering) {
        if (!rule.has_exact() || rule.exact().destination() != dst ||
            rule.exact().dest_qp() != job.flows(i).dest_qp()) {
          continue;
        }
        fp->set_rule_id(id);
        fp->set_policy(rule.policy());
        auto pol = g->second.policies.find(rule.policy());
        if (pol == g->second.policies.end()) break;
        for (const auto& sl : pol->second.segment_lists()) {
          if (sl.backup() || sl.weight() == 0) continue;
          fp->set_path_id(sl.path_id());
          for (const auto& p : out.paths) {
            if (p.gateway == fp->gateway() && p.path_id == sl.path_id()) {
              for (const auto& l : p.links) fp->add_links(l);
            }
          }
          break;
        }
        break;
      }
    }
    return s;
  }

  std::string version_;
  pa::Planner planner_;
  std::map<std::string, pa::LinkId> link_ids_;
  std::map<pa::LinkId, LinkState> initial_;
  std::map<std::string, PlacedJob> placed_;
  std::vector<std::string> order_;
};

}  // namespace

std::unique_ptr<Planner> make_topology_planner(pathalg::Topology topology, std::string version) {
  return std::make_unique<TopologyPlanner>(std::move(topology), std::move(version));
}

}  // namespace srv6gw::sr_controller
