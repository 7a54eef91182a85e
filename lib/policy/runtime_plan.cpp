// SPDX-License-Identifier: BSD-3-Clause
// What both apply paths build before publishing anything: the checks they share, the plan of
// policy slots (unchanged policies keep their compiled objects, changed ones are recompiled
// with their engine factors carried over) and the local SID table. Nothing here touches
// what the workers read.
#include <algorithm>
#include <unordered_map>

#include "config/validate.hpp"
#include "policy/runtime.hpp"
#include "policy/runtime_internal.hpp"

namespace srv6gw::policy {

using namespace runtime_detail;

LocalSidTable::LocalSidTable(std::vector<Entry> entries) : entries_(std::move(entries)) {
  std::sort(entries_.begin(), entries_.end(),
            [](const Entry& a, const Entry& b) { return a.sid < b.sid; });
}

std::optional<config::ConfigError> Runtime::check_common(const config::GatewayConfig& cfg) const {
  if (!(cfg.capacities == running_.capacities))
    return error_at(kCapacitiesPath,
                    "capacities size the tables at start; changing them needs a restart");
  // Rails are ports, queues and workers set up at start; what the published configuration
  // holds of them (MACs, fabric VLAN, local SIDs) may change.
  if (has_config_) {
    if (auto e = config::check_rails_change(running_, cfg)) return e;
  }
  if (cfg.policies.size() > slot_capacity_)
    return error_at("/srv6gw:gateway/policies", std::to_string(cfg.policies.size()) +
                                                    " policies exceed capacities/policies " +
                                                    std::to_string(slot_capacity_));
  return std::nullopt;
}

std::optional<config::ConfigError> Runtime::plan_policies(const config::GatewayConfig& cfg,
                                                          const CompileEnv& env,
                                                          PolicyPlan& plan) const {
  plan.free_after = free_slots_;
  std::unordered_map<std::string_view, const config::Policy*> running_by_name;
  running_by_name.reserve(running_.policies.size());
  for (const config::Policy& rp : running_.policies) running_by_name[rp.name] = &rp;
  for (const config::Policy& p : cfg.policies) {
    if (plan.slot_by_name.count(p.name))
      return error_at(config::policy_path(p.name), "duplicate policy name");
    config::ConfigError err;
    auto running_it = slot_by_name_.find(p.name);
    uint32_t slot;
    std::unique_ptr<const CompiledPolicy> fresh;
    if (running_it != slot_by_name_.end()) {
      slot = running_it->second;
      const CompiledPolicy* old = slots_[slot].load(std::memory_order_relaxed);
      auto old_cfg = running_by_name.find(p.name);
      if (!(old_cfg != running_by_name.end() && *old_cfg->second == p && env == env_)) {
        // Rebuild; engine factors follow the segment lists by name.
        std::vector<uint32_t> factors(p.segment_lists.size(), kFactorOne);
        for (size_t i = 0; i < p.segment_lists.size(); ++i)
          for (const CompiledPath& path : old->paths)
            if (path.name == p.segment_lists[i].name) factors[i] = path.factor_q16;
        fresh = compile_policy(p, env, factors, err, config::policy_rail_mask(p, cfg));
        if (!fresh) return err;
      }
    } else {
      if (plan.free_after.empty())
        return error_at(config::policy_path(p.name),
                        "no free policy slot (capacities/policies is " +
                            std::to_string(slot_capacity_) +
                            "; slots of removed policies return after a grace period)");
      slot = plan.free_after.back();
      plan.free_after.pop_back();
      fresh = compile_policy(p, env, {}, err, config::policy_rail_mask(p, cfg));
      if (!fresh) return err;
    }
    plan.slot_by_name.emplace(p.name, slot);
    plan.planned.push_back({slot, std::move(fresh)});
  }
  return std::nullopt;
}

std::optional<config::ConfigError> Runtime::build_local_sids(
    const config::GatewayConfig& cfg, std::shared_ptr<const LocalSidTable>& out) const {
  size_t total = cfg.local_sids.size();
  for (const config::Rail& rail : cfg.rails) total += rail.local_sids.size();
  if (total > cfg.capacities.local_sids)
    return error_at("/srv6gw:gateway/local-sids", "local SIDs exceed capacities/local-sids " +
                                                      std::to_string(cfg.capacities.local_sids));
  std::vector<LocalSidTable::Entry> sid_entries;
  auto add = [&](const config::LocalSid& ls, uint16_t rail,
                 const std::string& path) -> std::optional<config::ConfigError> {
    for (const auto& e : sid_entries)
      if (e.sid == ls.sid) return error_at(path, "duplicate local SID");
    sid_entries.push_back({ls.sid, ls.behavior, rail});
    return std::nullopt;
  };
  for (const config::LocalSid& ls : cfg.local_sids)
    if (auto e = add(ls, LocalSidTable::kAnyRail, config::local_sid_path(ls.sid))) return e;
  for (size_t r = 0; r < cfg.rails.size(); ++r)
    for (const config::LocalSid& ls : cfg.rails[r].local_sids)
      if (auto e = add(ls, uint16_t(r), config::rail_local_sid_path(cfg.rails[r].name, ls.sid)))
        return e;
  if (has_config_ && cfg.local_sids == running_.local_sids && cfg.rails == running_.rails) {
    out = view_.load(std::memory_order_relaxed)->local_sids_owner;  // unchanged: shared
    return std::nullopt;
  }
  out = std::make_shared<const LocalSidTable>(std::move(sid_entries));
  return std::nullopt;
}

}  // namespace srv6gw::policy
