// SPDX-License-Identifier: BSD-3-Clause
// policy::Runtime: creation of the tables, the public control entry points (each takes the
// mutex and calls the *_locked step in its own file) and the control-side queries.
// The rest of the class is split by concern:
//   runtime_publication.cpp  views, policy slots, RCU retirement and reclaim
//   runtime_exact_table.cpp  edits of the exact table, their undo, counts by kind
//   runtime_plan.cpp         checks shared by both paths, policy plan, local SID table
//   runtime_apply_full.cpp   apply(): the whole configuration, every table diffed
//   runtime_apply_delta.cpp  apply_delta(): only the steering rules that changed
#include "policy/runtime.hpp"

#include <rte_errno.h>
#include <rte_memzone.h>

#include <algorithm>
#include <cstdio>

#include "policy/runtime_internal.hpp"

namespace srv6gw::policy {

using namespace runtime_detail;

namespace {
std::atomic<uint32_t> g_table_seq{0};
}  // namespace

std::unique_ptr<Runtime> Runtime::create(const config::GatewayConfig& cfg, rte_rcu_qsbr* qsbr,
                                         uint64_t tsc_hz, int socket_id,
                                         config::ConfigError& error) {
  const config::Capacities& caps = cfg.capacities;
  if (caps.policies == 0 || caps.policies > (1u << 24)) {
    error = error_at(std::string(kCapacitiesPath) + "/policies", "must be within 1..16777216");
    return nullptr;
  }
  std::unique_ptr<Runtime> rt(new Runtime());
  rt->qsbr_ = qsbr;
  rt->tsc_hz_ = tsc_hz;
  rt->socket_id_ = socket_id;
  rt->slot_capacity_ = caps.policies;
  rt->slots_.reset(new std::atomic<const CompiledPolicy*>[caps.policies]());
  rt->slot_users_.assign(caps.policies, 0);
  for (uint32_t s = caps.policies; s-- > 0;) rt->free_slots_.push_back(s);
  const uint32_t seq = g_table_seq.fetch_add(1);

  char name[RTE_MEMZONE_NAMESIZE];
  std::snprintf(name, sizeof name, "srv6gw_exact_%u", seq);
  // A quarter more entries than the configured capacity (validate() keeps the entry count
  // within it) let inserts proceed while deleted keys wait for their RCU grace period; the
  // table keeps at least twice as many lanes as entries, so nearly every key sits in its
  // home bucket (exact_table.hpp).
  std::string table_error;
  rt->exact_ = ExactTable::create(name, std::max<uint32_t>(caps.exact_entries, 64), qsbr, socket_id,
                                  table_error);
  if (!rt->exact_) {
    error = error_at(std::string(kCapacitiesPath) + "/exact-entries",
                     "cannot create the exact steering table: " + table_error);
    return nullptr;
  }

  std::snprintf(name, sizeof name, "srv6gw_lpm4_%u", seq);
  rte_lpm_config lc{};
  lc.max_rules = std::max<uint32_t>(caps.lpm4_rules, 16);
  // One tbl8 group per rule longer than /24 at worst.
  lc.number_tbl8s = std::max<uint32_t>(caps.lpm4_rules, 256);
  rt->lpm4_ = rte_lpm_create(name, socket_id, &lc);
  if (!rt->lpm4_) {
    error = error_at(std::string(kCapacitiesPath) + "/lpm4-rules",
                     std::string("cannot create the IPv4 LPM table: ") + rte_strerror(rte_errno));
    return nullptr;
  }
  rte_lpm_rcu_config lrc{};
  lrc.v = qsbr;
  lrc.mode = RTE_LPM_QSBR_MODE_DQ;
  if (rte_lpm_rcu_qsbr_add(rt->lpm4_, &lrc) != 0) {
    error = error_at(
        std::string(kCapacitiesPath) + "/lpm4-rules",
        std::string("cannot attach RCU to the IPv4 LPM table: ") + rte_strerror(rte_errno));
    return nullptr;
  }

  // An empty view so that workers never see null.
  auto empty = std::make_unique<View>();
  empty->local_sids_owner =
      std::make_shared<const LocalSidTable>(std::vector<LocalSidTable::Entry>{});
  empty->local_sids = empty->local_sids_owner.get();
  empty->steering.exact = rt->exact_.get();
  empty->steering.lpm4 = rt->lpm4_;
  rt->view_.store(empty.release(), std::memory_order_release);
  rt->running_.capacities = caps;

  if (auto e = rt->apply(cfg)) {
    error = *e;
    return nullptr;
  }
  return rt;
}

Runtime::~Runtime() {
  // Workers are stopped by now: free everything without waiting.
  for (Retired& r : retired_) r.free_fn();
  retired_.clear();
  if (slots_) {
    for (uint32_t s = 0; s < slot_capacity_; ++s) delete slots_[s].load();
  }
  delete view_.load();
  if (lpm4_) rte_lpm_free(lpm4_);
}

std::optional<config::ConfigError> Runtime::apply(const config::GatewayConfig& cfg) {
  std::lock_guard lock(mutex_);
  return apply_locked(cfg);
}

std::optional<config::ConfigError> Runtime::apply_validated(const config::GatewayConfig& cfg) {
  std::lock_guard lock(mutex_);
  return apply_locked(cfg, /*validated=*/true);
}

std::optional<config::ConfigError> Runtime::apply_delta(const config::GatewayConfig& cfg,
                                                        const SteeringDelta& delta) {
  std::lock_guard lock(mutex_);
  return apply_delta_locked(cfg, delta);
}

std::optional<uint32_t> Runtime::slot_of(std::string_view policy) const {
  std::lock_guard lock(mutex_);
  auto it = slot_by_name_.find(policy);
  if (it == slot_by_name_.end()) return std::nullopt;
  return it->second;
}

std::vector<Runtime::PolicyInfo> Runtime::policies() const {
  std::lock_guard lock(mutex_);
  std::vector<PolicyInfo> out;
  for (const config::Policy& p : running_.policies) {
    auto it = slot_by_name_.find(p.name);
    if (it == slot_by_name_.end()) continue;
    out.push_back({it->second, slots_[it->second].load(std::memory_order_relaxed)});
  }
  return out;
}

Runtime::TableStats Runtime::table_stats() const {
  std::lock_guard lock(mutex_);
  TableStats st;
  st.exact_entries = exact_counts_.exact;
  st.dst_any_entries = exact_counts_.dst_any;
  st.lpm4_rules = uint32_t(installed_lpm4_.size());
  const View* v = view_.load(std::memory_order_relaxed);
  if (v->prefix6_owner) st.prefix6_rules = uint32_t(v->prefix6_owner->size());
  if (v->dscp_prefix4_owner) st.dscp_prefix_rules += uint32_t(v->dscp_prefix4_owner->size());
  if (v->dscp_prefix6_owner) st.dscp_prefix_rules += uint32_t(v->dscp_prefix6_owner->size());
  if (v->qp_ranges_owner) st.qp_ranges = uint32_t(v->qp_ranges_owner->interval_count());
  st.local_sids = uint32_t(v->local_sids->size());
  return st;
}

size_t Runtime::steering_rule_count() const {
  std::lock_guard lock(mutex_);
  return steering_rules_;
}

std::optional<config::ConfigError> Runtime::set_path_factors(std::string_view policy,
                                                             std::span<const double> factors,
                                                             uint64_t down_mask) {
  std::lock_guard lock(mutex_);
  auto it = slot_by_name_.find(policy);
  if (it == slot_by_name_.end()) return error_at(config::policy_path(policy), "no such policy");
  const uint32_t slot = it->second;
  const CompiledPolicy* old = slots_[slot].load(std::memory_order_relaxed);
  config::ConfigError error;
  std::unique_ptr<const CompiledPolicy> fresh = with_factors(*old, factors, error, down_mask);
  if (!fresh) return error;
  slots_[slot].store(fresh.release(), std::memory_order_release);
  retire([old] { delete old; });
  return std::nullopt;
}

}  // namespace srv6gw::policy
