// SPDX-License-Identifier: BSD-3-Clause
// Publication of a new state to the workers and RCU reclamation of the old one: building the
// final and the transitional View, putting compiled policies into their slots, putting
// everything back after a failed table update, and retiring replaced objects until every
// worker has passed a quiescent state (the order both apply paths follow).
#include <algorithm>

#include "policy/runtime.hpp"

namespace srv6gw::policy {

namespace {

// A copy of everything but the steering rules (Runtime::running_config()).
config::GatewayConfig without_steering(const config::GatewayConfig& c) {
  // Everything but the rules, as a whole: config::GatewaySettings is the configuration
  // without its steering rules, so a member added there is carried over with no change here.
  config::GatewayConfig out;
  static_cast<config::GatewaySettings&>(out) = static_cast<const config::GatewaySettings&>(c);
  return out;
}

}  // namespace

void Runtime::retire(std::function<void()> free_fn) {
  const uint64_t token = qsbr_ ? rte_rcu_qsbr_start(qsbr_) : 0;
  retired_.push_back({token, std::move(free_fn)});
}

void Runtime::reclaim() {
  std::lock_guard lock(mutex_);
  // Tokens grow monotonically: stop at the first retirement still in its grace period.
  while (!retired_.empty()) {
    if (qsbr_ && rte_rcu_qsbr_check(qsbr_, retired_.front().token, false) != 1) break;
    Retired r = std::move(retired_.front());
    retired_.pop_front();
    r.free_fn();
  }
}

size_t Runtime::retired_pending() const {
  std::lock_guard lock(mutex_);
  return retired_.size();
}

namespace {

// The fabric VLAN tag and the port MTUs as the data plane reads them.
// Per rail: each rail's port roles carry them (the loader gives every rail the gateway-wide
// ports/fabric-vlan and MTUs).
void set_port_settings(const config::PortRole& host, const config::PortRole& fabric, Settings& s) {
  const config::FabricVlan& vlan = fabric.vlan;
  s.fabric_vlan = vlan.enabled;
  s.host_keep_vlan = vlan.enabled && vlan.host == config::HostVlanMode::keep;
  s.fabric_vlan_tci = uint16_t(vlan.id & 0x0FFF);
  for (unsigned dscp = 0; dscp < s.pcp_tci_of_dscp.size(); ++dscp)
    s.pcp_tci_of_dscp[dscp] = uint16_t(config::pcp_for_dscp(vlan, uint8_t(dscp)) << 13);
  s.host_mtu = host.mtu;
  s.fabric_mtu = fabric.mtu;
  s.host_mtu_limit = s.host_mtu ? s.host_mtu : UINT32_MAX;
  s.fabric_mtu_limit = s.fabric_mtu ? s.fabric_mtu : UINT32_MAX;
  s.mtu_checks = s.host_mtu != 0 || s.fabric_mtu != 0;
}

}  // namespace

std::unique_ptr<View> Runtime::make_view(const config::GatewayConfig& cfg) {
  auto v = std::make_unique<View>();
  v->generation = next_generation_++;
  v->settings.transparent_mac = cfg.transparent_mac;
  v->settings.has_fabric_nexthop_mac = cfg.fabric_nexthop_mac.has_value();
  if (cfg.fabric_nexthop_mac) v->settings.fabric_nexthop_mac = *cfg.fabric_nexthop_mac;
  v->settings.has_host_mac = cfg.host_mac.has_value();
  if (cfg.host_mac) v->settings.host_mac = *cfg.host_mac;
  v->settings.steering_miss = cfg.steering_miss;
  v->settings.non_roce = cfg.non_roce;
  v->settings.fabric_non_sid = cfg.fabric_non_sid;
  set_port_settings(cfg.host_port, cfg.fabric_port, v->settings);
  for (const config::Rail& rail : config::effective_rails(cfg)) {
    Settings& rs = v->rail_settings.emplace_back(v->settings);
    set_port_settings(rail.host_port, rail.fabric_port, rs);
    if (rail.fabric_nexthop_mac) {
      rs.has_fabric_nexthop_mac = true;
      rs.fabric_nexthop_mac = *rail.fabric_nexthop_mac;
    }
    if (rail.host_mac) {
      rs.has_host_mac = true;
      rs.host_mac = *rail.host_mac;
    }
  }
  v->steering.exact = exact_.get();
  v->steering.lpm4 = lpm4_;
  return v;
}

void Runtime::bind_tables(View& v, const ExactCounts& counts) {
  // The workers read the tables through raw pointers: point them at the owners just set.
  v.steering.qp_ranges = v.qp_ranges_owner.get();
  v.steering.prefix6 = v.prefix6_owner.get();
  v.steering.dscp_prefix4 = v.dscp_prefix4_owner.get();
  v.steering.dscp_prefix6 = v.dscp_prefix6_owner.get();
  v.local_sids = v.local_sids_owner.get();
  v.steering.has_exact = counts.exact > 0;
  v.steering.exact_dscp = counts.exact_dscp > 0;
  v.steering.has_dst_any = counts.dst_any > 0;
  v.steering.dst_any_dscp = counts.dst_any_dscp > 0;
}

std::unique_ptr<View> Runtime::make_transitional(const View& final_view, const View& old_view) {
  // While the hash and LPM change under the workers, the flags must cover both the old and
  // the new entries: the transitional view is the final one with the flags OR-ed.
  auto t = std::make_unique<View>(final_view);
  t->generation = next_generation_++;
  SteeringView& s = t->steering;
  const SteeringView& o = old_view.steering;
  s.has_exact |= o.has_exact;
  s.exact_dscp |= o.exact_dscp;
  s.has_dst_any |= o.has_dst_any;
  s.dst_any_dscp |= o.dst_any_dscp;
  s.has_prefix4 |= o.has_prefix4;
  return t;
}

void Runtime::publish_policies(PolicyPlan& plan) {
  for (PolicyPlan::Planned& pl : plan.planned) {
    if (!pl.fresh) continue;
    plan.replaced.emplace_back(pl.slot, slots_[pl.slot].load(std::memory_order_relaxed));
    slots_[pl.slot].store(pl.fresh.release(), std::memory_order_release);
  }
}

void Runtime::abort_publish(PolicyPlan& plan, const View* old_view, const View* trans_ptr) {
  view_.store(old_view, std::memory_order_release);
  std::vector<const CompiledPolicy*> fresh_objects;
  for (auto& [slot, prev] : plan.replaced) {
    fresh_objects.push_back(slots_[slot].load(std::memory_order_relaxed));
    slots_[slot].store(prev, std::memory_order_release);
  }
  retire([trans_ptr, fresh_objects] {
    delete trans_ptr;
    for (const CompiledPolicy* p : fresh_objects) delete p;
  });
}

void Runtime::finish_publish(PolicyPlan& plan, std::unique_ptr<View> final_view,
                             const View* old_view, const View* trans_ptr,
                             const config::GatewayConfig& cfg, const CompileEnv& env) {
  // Final view (exact flags).
  view_.store(final_view.release(), std::memory_order_release);

  // Removed policies leave their slots; the slot index is reusable after a grace period
  // (a worker may still hold it from a steering lookup made before the deletes).
  std::vector<const CompiledPolicy*> to_free;
  std::vector<uint32_t> freed_slots;
  for (const auto& [name, slot] : slot_by_name_) {
    if (plan.slot_by_name.count(name)) continue;
    to_free.push_back(slots_[slot].load(std::memory_order_relaxed));
    slots_[slot].store(nullptr, std::memory_order_release);
    freed_slots.push_back(slot);
  }
  for (auto& [slot, prev] : plan.replaced)
    if (prev) to_free.push_back(prev);
  retire([this, old_view, trans_ptr, to_free, freed_slots] {
    delete old_view;
    delete trans_ptr;
    for (const CompiledPolicy* p : to_free) delete p;
    free_slots_.insert(free_slots_.end(), freed_slots.begin(), freed_slots.end());
  });

  // Commit the control-side state.
  free_slots_ = std::move(plan.free_after);
  slot_by_name_ = std::move(plan.slot_by_name);
  running_ = without_steering(cfg);
  env_ = env;
  has_config_ = true;
}

}  // namespace srv6gw::policy
