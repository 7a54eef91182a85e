// SPDX-License-Identifier: BSD-3-Clause
#include "policy/runtime.hpp"

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_hash_crc.h>

#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "config/validate.hpp"

namespace srv6gw::policy {

namespace {

constexpr const char* kCapacitiesPath = "/srv6gw:gateway/capacities";
constexpr const char* kSteeringPath = "/srv6gw:gateway/steering";

std::atomic<uint32_t> g_table_seq{0};

bool key_less(const ExactKey& a, const ExactKey& b) {
  return std::memcmp(&a, &b, sizeof(ExactKey)) < 0;
}
bool key_equal(const ExactKey& a, const ExactKey& b) {
  return std::memcmp(&a, &b, sizeof(ExactKey)) == 0;
}
uint32_t mask4(uint32_t ip, uint8_t depth) {
  return depth == 0 ? 0 : ip & (~uint32_t(0) << (32 - depth));
}
void* slot_data(uint32_t slot) {
  return reinterpret_cast<void*>(uintptr_t(slot));
}

config::ConfigError error_at(std::string path, std::string message) {
  return {std::move(path), std::move(message)};
}

// rte_hash_add_key_data, waiting a bounded moment for free key slots: those of deleted
// entries come back once the workers passed a quiescent state (the hash reclaims its defer
// queue on each attempt).
int add_exact(rte_hash* h, const ExactKey& key, uint32_t slot) {
  int rc = rte_hash_add_key_data(h, &key, slot_data(slot));
  for (int tries = 0; rc == -ENOSPC && tries < 2000; ++tries) {
    rte_delay_us_sleep(50);
    rc = rte_hash_add_key_data(h, &key, slot_data(slot));
  }
  return rc;
}

// A copy of everything but the steering rules (Runtime::running_config()).
config::GatewayConfig without_steering(const config::GatewayConfig& c) {
  // Naming every member: a member added to GatewayConfig breaks the build here until it is
  // copied below too.
  const auto& [host_port, fabric_port, queues, mbufs, transparent_mac, fabric_nexthop_mac, host_mac,
               source, hop_limit, steering_miss, non_roce, fabric_non_sid, stats_interval_ms,
               capacities, engine, probe, policies, steering, local_sids] = c;
  (void)steering;
  config::GatewayConfig out;
  out.host_port = host_port;
  out.fabric_port = fabric_port;
  out.queues = queues;
  out.mbufs = mbufs;
  out.transparent_mac = transparent_mac;
  out.fabric_nexthop_mac = fabric_nexthop_mac;
  out.host_mac = host_mac;
  out.source = source;
  out.hop_limit = hop_limit;
  out.steering_miss = steering_miss;
  out.non_roce = non_roce;
  out.fabric_non_sid = fabric_non_sid;
  out.stats_interval_ms = stats_interval_ms;
  out.capacities = capacities;
  out.engine = engine;
  out.probe = probe;
  out.policies = policies;
  out.local_sids = local_sids;
  return out;
}

}  // namespace

LocalSidTable::LocalSidTable(std::vector<Entry> entries) : entries_(std::move(entries)) {
  std::sort(entries_.begin(), entries_.end(),
            [](const Entry& a, const Entry& b) { return a.sid < b.sid; });
}

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

  char name[RTE_HASH_NAMESIZE];
  std::snprintf(name, sizeof name, "srv6gw_exact_%u", seq);
  rte_hash_parameters hp{};
  hp.name = name;
  // Headroom: a quarter more key slots than the configured capacity (validate() keeps the
  // entry count within the capacity), which rte_hash rounds up to a power of two of buckets.
  // A full cuckoo table moves keys to their secondary buckets and, with the extendable
  // table, onto chained buckets, each a further dependent cache miss per lookup; at a load
  // of at most 5/8 nearly every key sits in its primary bucket. The spare key slots also let
  // inserts proceed while deleted keys wait for their RCU grace period.
  const uint32_t exact_capacity = std::max<uint32_t>(caps.exact_entries, 64);
  hp.entries = exact_capacity + exact_capacity / 4;
  hp.key_len = sizeof(ExactKey);
  hp.hash_func = rte_hash_crc;
  hp.hash_func_init_val = 0;
  hp.socket_id = socket_id;
  // Lock-free readers against the single control-thread writer; the extendable bucket
  // table makes every insert up to `entries` succeed regardless of cuckoo collisions.
  hp.extra_flag = RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF | RTE_HASH_EXTRA_FLAGS_EXT_TABLE;
  rt->exact_ = rte_hash_create(&hp);
  if (!rt->exact_) {
    error =
        error_at(std::string(kCapacitiesPath) + "/exact-entries",
                 std::string("cannot create the exact steering table: ") + rte_strerror(rte_errno));
    return nullptr;
  }
  rte_hash_rcu_config hrc{};
  hrc.v = qsbr;
  hrc.mode = RTE_HASH_QSBR_MODE_DQ;
  if (rte_hash_rcu_qsbr_add(rt->exact_, &hrc) != 0) {
    error = error_at(
        std::string(kCapacitiesPath) + "/exact-entries",
        std::string("cannot attach RCU to the exact steering table: ") + rte_strerror(rte_errno));
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
  empty->steering.exact = rt->exact_;
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
  if (exact_) rte_hash_free(exact_);
  if (lpm4_) rte_lpm_free(lpm4_);
}

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

void Runtime::ExactCounts::add(const config::SteeringRule& r, int sign) {
  const uint32_t d = uint32_t(sign);  // -1 wraps: unsigned arithmetic modulo 2^32
  if (r.kind == config::SteeringKind::exact) {
    exact += d;
    if (r.dscp) exact_dscp += d;
  } else if (r.kind == config::SteeringKind::dst_any_qp) {
    dst_any += d;
    if (r.dscp) dst_any_dscp += d;
  }
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

// ---------------- steps shared by the full and the delta path ----------------

std::optional<config::ConfigError> Runtime::check_common(const config::GatewayConfig& cfg) const {
  if (!(cfg.capacities == running_.capacities))
    return error_at(kCapacitiesPath,
                    "capacities size the tables at start; changing them needs a restart");
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
        fresh = compile_policy(p, env, factors, err);
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
      fresh = compile_policy(p, env, {}, err);
      if (!fresh) return err;
    }
    plan.slot_by_name.emplace(p.name, slot);
    plan.planned.push_back({slot, std::move(fresh)});
  }
  return std::nullopt;
}

std::optional<config::ConfigError> Runtime::build_local_sids(
    const config::GatewayConfig& cfg, std::shared_ptr<const LocalSidTable>& out) const {
  if (cfg.local_sids.size() > cfg.capacities.local_sids)
    return error_at("/srv6gw:gateway/local-sids", "local SIDs exceed capacities/local-sids " +
                                                      std::to_string(cfg.capacities.local_sids));
  std::vector<LocalSidTable::Entry> sid_entries;
  for (const config::LocalSid& ls : cfg.local_sids) {
    for (const auto& e : sid_entries)
      if (e.sid == ls.sid) return error_at(config::local_sid_path(ls.sid), "duplicate local SID");
    sid_entries.push_back({ls.sid, ls.behavior});
  }
  if (has_config_ && cfg.local_sids == running_.local_sids) {
    out = view_.load(std::memory_order_relaxed)->local_sids_owner;  // unchanged: shared
    return std::nullopt;
  }
  out = std::make_shared<const LocalSidTable>(std::move(sid_entries));
  return std::nullopt;
}

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
  v->steering.exact = exact_;
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

std::optional<config::ConfigError> Runtime::update_exact(const std::vector<ExactOp>& deletes,
                                                         const std::vector<ExactOp>& upserts,
                                                         size_t& deleted, size_t& upserted) {
  // Deletes first (those matches are gone in the new configuration, and it keeps the peak
  // occupancy at max(old, new)), then inserts/updates. An update of an existing key's data
  // is a single atomic store in the lock-free rte_hash (and needs no free key slot).
  deleted = upserted = 0;
  for (; deleted < deletes.size(); ++deleted) rte_hash_del_key(exact_, &deletes[deleted].key);
  for (; upserted < upserts.size(); ++upserted) {
    const ExactOp& e = upserts[upserted];
    if (const int rc = add_exact(exact_, e.key, e.new_slot); rc < 0)
      return error_at(kSteeringPath,
                      std::string("exact steering table insert failed: ") + rte_strerror(-rc));
  }
  return std::nullopt;
}

void Runtime::undo_exact(const std::vector<ExactOp>& deletes, const std::vector<ExactOp>& upserts,
                         size_t deleted, size_t upserted) {
  // Reverse order; updates back to the old data need no key slot, and every re-insert
  // restores an entry that fitted before.
  while (upserted-- > 0) {
    const ExactOp& e = upserts[upserted];
    if (e.old_slot == kNoSlot)
      rte_hash_del_key(exact_, &e.key);
    else
      add_exact(exact_, e.key, e.old_slot);
  }
  while (deleted-- > 0) add_exact(exact_, deletes[deleted].key, deletes[deleted].old_slot);
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

// ---------------- full path: the whole configuration ----------------

std::optional<config::ConfigError> Runtime::apply_locked(const config::GatewayConfig& cfg,
                                                         bool validated) {
#ifdef SRV6GW_HAVE_CONFIG_VALIDATE
  if (!validated) {
    if (auto e = config::validate(cfg)) return e;
  }
#else
  (void)validated;
#endif
  if (auto e = check_common(cfg)) return e;
  const config::Capacities& caps = cfg.capacities;
  const CompileEnv env{cfg.source, cfg.hop_limit, tsc_hz_};

  // ---------------- build everything; nothing is published on error ----------------
  PolicyPlan plan;
  if (auto e = plan_policies(cfg, env, plan)) return e;

  // Steering.
  struct IndexedExact {
    ExactKey key;
    uint32_t slot;
    size_t rule;
  };
  struct IndexedLpm4 {
    Lpm4Entry e;
    size_t rule;
  };
  std::vector<IndexedExact> exact;
  std::vector<IndexedLpm4> lpm4;
  std::vector<QpRangeTable::Rule> qp_rules;
  std::vector<PrefixTable::Rule> prefix6_rules, dscp4_rules, dscp6_rules;
  ExactCounts counts;
  std::vector<uint32_t> users(slot_capacity_, 0);
  uint32_t default4 = kNoSlot;
  exact.reserve(cfg.steering.size());
  for (size_t i = 0; i < cfg.steering.size(); ++i) {
    const config::SteeringRule& r = cfg.steering[i];
    auto rpath = [&] { return config::rule_path(r, i); };
    auto sit = plan.slot_by_name.find(r.policy);
    if (sit == plan.slot_by_name.end())
      return error_at(rpath() + "/policy", "unknown policy '" + r.policy + "'");
    const uint32_t slot = sit->second;
    ++users[slot];
    if (r.dscp && *r.dscp > 63) return error_at(rpath() + "/dscp", "DSCP is 0..63");
    const uint8_t dscp = r.dscp ? *r.dscp : kAnyDscp;
    const bool needs_dst = r.kind != config::SteeringKind::qp_range || r.has_dst;
    if (needs_dst && r.dst.family == net::Family::none)
      return error_at(rpath() + "/dst", "destination address missing");
    switch (r.kind) {
      case config::SteeringKind::exact:
        if (r.dest_qp > config::kMaxQp) return error_at(rpath() + "/dest-qp", "DestQP is 24 bits");
        exact.push_back({make_exact_key(r.dst, r.dest_qp, dscp), slot, i});
        counts.add(r, 1);
        break;
      case config::SteeringKind::dst_any_qp:
        exact.push_back({make_exact_key(r.dst, kAnyQp, dscp), slot, i});
        counts.add(r, 1);
        break;
      case config::SteeringKind::qp_range:
        if (r.qp_low > r.qp_high || r.qp_high > config::kMaxQp)
          return error_at(rpath() + "/qp-range", "need qp-low <= qp-high <= 16777215");
        qp_rules.push_back({r.has_dst, r.dst, dscp, r.qp_low, r.qp_high, slot});
        break;
      case config::SteeringKind::prefix: {
        const unsigned max_len = r.dst.family == net::Family::ipv4 ? 32 : 128;
        if (r.prefix_len > max_len)
          return error_at(rpath() + "/prefix-length",
                          "longer than " + std::to_string(max_len) + " bits");
        PrefixTable::Rule pr{r.dst.bytes, r.prefix_len, dscp, slot};
        if (r.dscp) {
          (r.dst.family == net::Family::ipv4 ? dscp4_rules : dscp6_rules).push_back(pr);
        } else if (r.dst.family == net::Family::ipv4 && r.prefix_len == 0) {
          if (default4 != kNoSlot) return error_at(rpath(), "duplicate prefix rule (0.0.0.0/0)");
          default4 = slot;  // rte_lpm depths are 1..32
        } else if (r.dst.family == net::Family::ipv4) {
          lpm4.push_back(
              {{mask4(r.dst.as_v4().host_order(), r.prefix_len), r.prefix_len, slot}, i});
        } else {
          prefix6_rules.push_back(pr);
        }
        break;
      }
    }
  }
  std::sort(exact.begin(), exact.end(),
            [](const IndexedExact& a, const IndexedExact& b) { return key_less(a.key, b.key); });
  for (size_t i = 1; i < exact.size(); ++i)
    if (key_equal(exact[i - 1].key, exact[i].key))
      return error_at(config::rule_path(cfg.steering[std::max(exact[i - 1].rule, exact[i].rule)],
                                        std::max(exact[i - 1].rule, exact[i].rule)),
                      "duplicate steering match");
  if (exact.size() > caps.exact_entries)
    return error_at(kSteeringPath, std::to_string(exact.size()) +
                                       " exact and dst-any rules exceed capacities/exact-entries " +
                                       std::to_string(caps.exact_entries));
  std::sort(lpm4.begin(), lpm4.end(), [](const IndexedLpm4& a, const IndexedLpm4& b) {
    return std::tie(a.e.ip, a.e.depth) < std::tie(b.e.ip, b.e.depth);
  });
  for (size_t i = 1; i < lpm4.size(); ++i)
    if (lpm4[i - 1].e.ip == lpm4[i].e.ip && lpm4[i - 1].e.depth == lpm4[i].e.depth) {
      const size_t rule = std::max(lpm4[i - 1].rule, lpm4[i].rule);
      return error_at(config::rule_path(cfg.steering[rule], rule), "duplicate prefix rule");
    }
  if (lpm4.size() + dscp4_rules.size() + (default4 != kNoSlot) > caps.lpm4_rules)
    return error_at(kSteeringPath, "IPv4 prefix rules exceed capacities/lpm4-rules " +
                                       std::to_string(caps.lpm4_rules));
  if (prefix6_rules.size() + dscp6_rules.size() > caps.lpm6_rules)
    return error_at(kSteeringPath, "IPv6 prefix rules exceed capacities/lpm6-rules " +
                                       std::to_string(caps.lpm6_rules));
  if (qp_rules.size() > caps.qp_ranges)
    return error_at(kSteeringPath,
                    "QP range rules exceed capacities/qp-ranges " + std::to_string(caps.qp_ranges));

  std::shared_ptr<const LocalSidTable> local_sids;
  if (auto e = build_local_sids(cfg, local_sids)) return e;

  // Immutable objects of the new view.
  const View* old_view = view_.load(std::memory_order_relaxed);
  auto final_view = make_view(cfg);
  final_view->qp_ranges_owner =
      qp_rules.empty() ? nullptr : std::make_shared<const QpRangeTable>(qp_rules);
  final_view->prefix6_owner =
      prefix6_rules.empty() ? nullptr : std::make_shared<const PrefixTable>(prefix6_rules);
  final_view->dscp_prefix4_owner =
      dscp4_rules.empty() ? nullptr : std::make_shared<const PrefixTable>(dscp4_rules);
  final_view->dscp_prefix6_owner =
      dscp6_rules.empty() ? nullptr : std::make_shared<const PrefixTable>(dscp6_rules);
  final_view->local_sids_owner = std::move(local_sids);
  bind_tables(*final_view, counts);
  final_view->steering.has_prefix4 = !lpm4.empty();
  final_view->steering.default4 = default4;
  auto transitional = make_transitional(*final_view, *old_view);

  // Diff of the exact table against what it holds (the table is the record): every new
  // entry looked up, marking the key positions that stay; when some installed keys are not
  // among them, one walk of the table deletes the unmarked ones.
  std::vector<ExactOp> exact_delete, exact_upsert;
  std::vector<bool> stays;  // by rte_hash key position
  size_t kept = 0;          // installed keys that stay
  for (const IndexedExact& x : exact) {
    void* data = nullptr;
    const int32_t pos = rte_hash_lookup_data(exact_, &x.key, &data);
    const uint32_t prev = pos >= 0 ? uint32_t(reinterpret_cast<uintptr_t>(data)) : kNoSlot;
    if (pos >= 0) {
      ++kept;
      if (size_t(pos) >= stays.size())
        stays.resize(std::max<size_t>(size_t(pos) + 1, exact.size() + exact.size() / 4));
      stays[size_t(pos)] = true;
    }
    if (prev != x.slot) exact_upsert.push_back({x.key, prev, x.slot});
  }
  if (kept < exact_counts_.entries()) {
    const void* key;
    void* data;
    uint32_t next = 0;
    int32_t pos;
    while ((pos = rte_hash_iterate(exact_, &key, &data, &next)) >= 0) {
      if (size_t(pos) < stays.size() && stays[size_t(pos)]) continue;
      exact_delete.push_back({*static_cast<const ExactKey*>(key),
                              uint32_t(reinterpret_cast<uintptr_t>(data)), kNoSlot});
    }
  }
  std::vector<Lpm4Entry> lpm_delete, lpm_upsert;
  {
    auto less = [](const Lpm4Entry& x, const Lpm4Entry& y) {
      return std::tie(x.ip, x.depth) < std::tie(y.ip, y.depth);
    };
    size_t a = 0, b = 0;
    while (a < installed_lpm4_.size() || b < lpm4.size()) {
      if (b == lpm4.size() || (a < installed_lpm4_.size() && less(installed_lpm4_[a], lpm4[b].e))) {
        lpm_delete.push_back(installed_lpm4_[a++]);
      } else if (a == installed_lpm4_.size() || less(lpm4[b].e, installed_lpm4_[a])) {
        lpm_upsert.push_back(lpm4[b++].e);
      } else {
        if (installed_lpm4_[a].slot != lpm4[b].e.slot) lpm_upsert.push_back(lpm4[b].e);
        ++a;
        ++b;
      }
    }
  }
  auto installed_lpm_slot = [&](const Lpm4Entry& k) -> uint32_t {
    auto it = std::lower_bound(installed_lpm4_.begin(), installed_lpm4_.end(), k,
                               [](const Lpm4Entry& e, const Lpm4Entry& x) {
                                 return std::tie(e.ip, e.depth) < std::tie(x.ip, x.depth);
                               });
    return it != installed_lpm4_.end() && it->ip == k.ip && it->depth == k.depth ? it->slot
                                                                                 : kNoSlot;
  };

  // ---------------- publish ----------------
  // 1. Policies: new and changed objects go into their slots before anything steers to them.
  publish_policies(plan);
  // 2. Transitional view (new immutable tables, flags covering old and new entries).
  const View* trans_ptr = transitional.release();
  view_.store(trans_ptr, std::memory_order_release);

  // 3. In-place tables.
  size_t exact_deleted = 0, exact_upserted = 0, lpm_deleted = 0, lpm_upserted = 0;
  std::optional<config::ConfigError> failure =
      update_exact(exact_delete, exact_upsert, exact_deleted, exact_upserted);
  for (; !failure && lpm_deleted < lpm_delete.size(); ++lpm_deleted)
    rte_lpm_delete(lpm4_, lpm_delete[lpm_deleted].ip, lpm_delete[lpm_deleted].depth);
  for (; !failure && lpm_upserted < lpm_upsert.size(); ++lpm_upserted) {
    const Lpm4Entry& e = lpm_upsert[lpm_upserted];
    const int rc = rte_lpm_add(lpm4_, e.ip, e.depth, e.slot);
    if (rc < 0) {
      failure = error_at(kSteeringPath, std::string("IPv4 LPM insert failed: ") +
                                            rte_strerror(-rc) + " (raise capacities/lpm4-rules)");
      break;
    }
  }

  if (failure) {
    // Undo in reverse order; every re-insert restores an entry that fitted before.
    while (lpm_upserted-- > 0) {
      const Lpm4Entry& e = lpm_upsert[lpm_upserted];
      const uint32_t prev = installed_lpm_slot(e);
      if (prev == kNoSlot)
        rte_lpm_delete(lpm4_, e.ip, e.depth);
      else
        rte_lpm_add(lpm4_, e.ip, e.depth, prev);
    }
    while (lpm_deleted-- > 0) {
      const Lpm4Entry& e = lpm_delete[lpm_deleted];
      rte_lpm_add(lpm4_, e.ip, e.depth, e.slot);
    }
    undo_exact(exact_delete, exact_upsert, exact_deleted, exact_upserted);
    abort_publish(plan, old_view, trans_ptr);
    return failure;
  }

  // 4. Final view, removed policies, retirement.
  finish_publish(plan, std::move(final_view), old_view, trans_ptr, cfg, env);
  installed_lpm4_.clear();
  for (const IndexedLpm4& e : lpm4) installed_lpm4_.push_back(e.e);
  exact_counts_ = counts;
  steering_rules_ = cfg.steering.size();
  slot_users_ = std::move(users);
  return std::nullopt;
}

// ---------------- delta path: only the steering rules that changed ----------------

std::optional<config::ConfigError> Runtime::apply_delta_locked(const config::GatewayConfig& cfg,
                                                               const SteeringDelta& delta) {
  if (!has_config_) return apply_locked(cfg, /*validated=*/true);
  int64_t net_rules = 0;
  for (const SteeringDelta::Change& c : delta.rules) {
    for (const config::SteeringRule* r : {c.before, c.after}) {
      // QP-range and prefix rules live in immutable tables built from the whole rule set
      // (and the IPv4 LPM is diffed against its sorted installed list): the full path
      // rebuilds those. Controllers change exact and dst-any rules; prefix changes are rare.
      if (r && r->kind != config::SteeringKind::exact &&
          r->kind != config::SteeringKind::dst_any_qp)
        return apply_locked(cfg, /*validated=*/true);
    }
    net_rules += int64_t(c.after != nullptr) - int64_t(c.before != nullptr);
  }
  // A delta that does not lead from what is installed to cfg (a caller out of step): the
  // full path puts the tables right from cfg itself.
  if (int64_t(steering_rules_) + net_rules != int64_t(cfg.steering.size()))
    return apply_locked(cfg, /*validated=*/true);

  if (auto e = check_common(cfg)) return e;
  const config::Capacities& caps = cfg.capacities;
  const CompileEnv env{cfg.source, cfg.hop_limit, tsc_hz_};

  // Net operations on the exact table, one per key: a key both removed and added is an
  // in-place update of its data (never a delete then insert: no window without the entry).
  struct KeyHash {
    size_t operator()(const ExactKey& k) const { return rte_hash_crc(&k, sizeof k, 0); }
  };
  struct KeyEq {
    bool operator()(const ExactKey& a, const ExactKey& b) const { return key_equal(a, b); }
  };
  std::unordered_map<ExactKey, size_t, KeyHash, KeyEq> op_of;  // key -> index in ops
  std::vector<ExactOp> ops;
  op_of.reserve(delta.rules.size());
  ops.reserve(delta.rules.size());
  ExactCounts counts = exact_counts_;
  std::unordered_map<uint32_t, int64_t> users_delta;  // slot -> change of its rule count
  auto key_of = [](const config::SteeringRule& r) {
    return make_exact_key(r.dst, r.kind == config::SteeringKind::exact ? r.dest_qp : kAnyQp,
                          r.dscp ? *r.dscp : kAnyDscp);
  };
  for (const SteeringDelta::Change& c : delta.rules) {
    if (!c.before) continue;
    const config::SteeringRule& r = *c.before;
    const ExactKey k = key_of(r);
    auto sit = slot_by_name_.find(r.policy);
    const uint32_t installed = hash_lookup_slot(exact_, k);
    if (sit == slot_by_name_.end() || installed != sit->second || op_of.count(k))
      return apply_locked(cfg, /*validated=*/true);  // not what is installed (see above)
    op_of.emplace(k, ops.size());
    ops.push_back({k, installed, kNoSlot});
    counts.add(r, -1);
    --users_delta[installed];
  }

  PolicyPlan plan;
  if (auto e = plan_policies(cfg, env, plan)) return e;

  // The data plane's own checks of each new rule, as the full path makes them.
  for (const SteeringDelta::Change& c : delta.rules) {
    if (!c.after) continue;
    const config::SteeringRule& r = *c.after;
    auto rpath = [&] { return config::rule_path(r, c.after_index); };
    auto sit = plan.slot_by_name.find(r.policy);
    if (sit == plan.slot_by_name.end())
      return error_at(rpath() + "/policy", "unknown policy '" + r.policy + "'");
    if (r.dscp && *r.dscp > 63) return error_at(rpath() + "/dscp", "DSCP is 0..63");
    if (r.dst.family == net::Family::none)
      return error_at(rpath() + "/dst", "destination address missing");
    if (r.kind == config::SteeringKind::exact && r.dest_qp > config::kMaxQp)
      return error_at(rpath() + "/dest-qp", "DestQP is 24 bits");
    const ExactKey k = key_of(r);
    if (auto it = op_of.find(k); it != op_of.end()) {
      ExactOp& op = ops[it->second];
      if (op.new_slot != kNoSlot) return error_at(rpath(), "duplicate steering match");
      op.new_slot = sit->second;
    } else {
      if (hash_lookup_slot(exact_, k) != kNoSlot)
        return error_at(rpath(), "duplicate steering match");
      op_of.emplace(k, ops.size());
      ops.push_back({k, kNoSlot, sit->second});
    }
    counts.add(r, 1);
    ++users_delta[sit->second];
  }
  if (counts.entries() > caps.exact_entries)
    return error_at(kSteeringPath, std::to_string(counts.entries()) +
                                       " exact and dst-any rules exceed capacities/exact-entries " +
                                       std::to_string(caps.exact_entries));
  // A removed policy must have no rule left (the full path finds them as unknown policies).
  for (const auto& [name, slot] : slot_by_name_) {
    if (plan.slot_by_name.count(name)) continue;
    auto d = users_delta.find(slot);
    const int64_t left = int64_t(slot_users_[slot]) + (d == users_delta.end() ? 0 : d->second);
    if (left > 0)
      return error_at(config::policy_path(name),
                      "removed but still used by " + std::to_string(left) + " steering rules");
  }

  std::shared_ptr<const LocalSidTable> local_sids;
  if (auto e = build_local_sids(cfg, local_sids)) return e;

  std::vector<ExactOp> exact_delete, exact_upsert;
  for (const ExactOp& op : ops) {
    if (op.new_slot == kNoSlot)
      exact_delete.push_back(op);
    else if (op.new_slot != op.old_slot)
      exact_upsert.push_back(op);
  }

  // The new view: the immutable QP-range and prefix tables (and the IPv4 LPM's flags) are
  // the running view's, shared; the exact flags come from the maintained counts.
  const View* old_view = view_.load(std::memory_order_relaxed);
  auto final_view = make_view(cfg);
  final_view->qp_ranges_owner = old_view->qp_ranges_owner;
  final_view->prefix6_owner = old_view->prefix6_owner;
  final_view->dscp_prefix4_owner = old_view->dscp_prefix4_owner;
  final_view->dscp_prefix6_owner = old_view->dscp_prefix6_owner;
  final_view->local_sids_owner = std::move(local_sids);
  bind_tables(*final_view, counts);
  final_view->steering.has_prefix4 = old_view->steering.has_prefix4;
  final_view->steering.default4 = old_view->steering.default4;
  auto transitional = make_transitional(*final_view, *old_view);

  // ---------------- publish (the full path's order) ----------------
  publish_policies(plan);
  const View* trans_ptr = transitional.release();
  view_.store(trans_ptr, std::memory_order_release);
  size_t deleted = 0, upserted = 0;
  if (auto failure = update_exact(exact_delete, exact_upsert, deleted, upserted)) {
    undo_exact(exact_delete, exact_upsert, deleted, upserted);
    abort_publish(plan, old_view, trans_ptr);
    return failure;
  }
  finish_publish(plan, std::move(final_view), old_view, trans_ptr, cfg, env);
  exact_counts_ = counts;
  steering_rules_ = cfg.steering.size();
  for (const auto& [slot, d] : users_delta) slot_users_[slot] = uint32_t(slot_users_[slot] + d);
  return std::nullopt;
}

}  // namespace srv6gw::policy
