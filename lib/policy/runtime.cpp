// SPDX-License-Identifier: BSD-3-Clause
#include "policy/runtime.hpp"

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_hash_crc.h>

#include <algorithm>
#include <cstdio>

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
  for (const ExactEntry& e : installed_exact_) {
    if (e.key.qp == kAnyQp)
      ++st.dst_any_entries;
    else
      ++st.exact_entries;
  }
  st.lpm4_rules = uint32_t(installed_lpm4_.size());
  const View* v = view_.load(std::memory_order_relaxed);
  if (v->prefix6_owner) st.prefix6_rules = uint32_t(v->prefix6_owner->size());
  if (v->dscp_prefix4_owner) st.dscp_prefix_rules += uint32_t(v->dscp_prefix4_owner->size());
  if (v->dscp_prefix6_owner) st.dscp_prefix_rules += uint32_t(v->dscp_prefix6_owner->size());
  if (v->qp_ranges_owner) st.qp_ranges = uint32_t(v->qp_ranges_owner->interval_count());
  st.local_sids = uint32_t(v->local_sids->size());
  return st;
}

std::optional<config::ConfigError> Runtime::set_path_factors(std::string_view policy,
                                                             std::span<const double> factors) {
  std::lock_guard lock(mutex_);
  auto it = slot_by_name_.find(policy);
  if (it == slot_by_name_.end()) return error_at(config::policy_path(policy), "no such policy");
  const uint32_t slot = it->second;
  const CompiledPolicy* old = slots_[slot].load(std::memory_order_relaxed);
  config::ConfigError error;
  std::unique_ptr<const CompiledPolicy> fresh = with_factors(*old, factors, error);
  if (!fresh) return error;
  slots_[slot].store(fresh.release(), std::memory_order_release);
  retire([old] { delete old; });
  return std::nullopt;
}

std::optional<config::ConfigError> Runtime::apply_locked(const config::GatewayConfig& cfg,
                                                         bool validated) {
#ifdef SRV6GW_HAVE_CONFIG_VALIDATE
  if (!validated) {
    if (auto e = config::validate(cfg)) return e;
  }
#else
  (void)validated;
#endif
  const config::Capacities& caps = cfg.capacities;
  if (!(caps == running_.capacities))
    return error_at(kCapacitiesPath,
                    "capacities size the tables at start; changing them needs a restart");
  if (cfg.policies.size() > slot_capacity_)
    return error_at("/srv6gw:gateway/policies", std::to_string(cfg.policies.size()) +
                                                    " policies exceed capacities/policies " +
                                                    std::to_string(slot_capacity_));
  const CompileEnv env{cfg.source, cfg.hop_limit, tsc_hz_};

  // ---------------- build everything; nothing is published on error ----------------
  struct Planned {
    uint32_t slot;
    std::unique_ptr<const CompiledPolicy> fresh;  // null = keep the running object
  };
  std::vector<Planned> planned;
  std::map<std::string, uint32_t, std::less<>> new_slot_by_name;
  std::vector<uint32_t> free_after = free_slots_;
  for (const config::Policy& p : cfg.policies) {
    if (new_slot_by_name.count(p.name))
      return error_at(config::policy_path(p.name), "duplicate policy name");
    config::ConfigError err;
    auto running_it = slot_by_name_.find(p.name);
    uint32_t slot;
    std::unique_ptr<const CompiledPolicy> fresh;
    if (running_it != slot_by_name_.end()) {
      slot = running_it->second;
      const CompiledPolicy* old = slots_[slot].load(std::memory_order_relaxed);
      const config::Policy* old_cfg = nullptr;
      for (const config::Policy& rp : running_.policies)
        if (rp.name == p.name) old_cfg = &rp;
      if (!(old_cfg && *old_cfg == p && env == env_)) {
        // Rebuild; engine factors follow the segment lists by name.
        std::vector<uint32_t> factors(p.segment_lists.size(), kFactorOne);
        for (size_t i = 0; i < p.segment_lists.size(); ++i)
          for (const CompiledPath& path : old->paths)
            if (path.name == p.segment_lists[i].name) factors[i] = path.factor_q16;
        fresh = compile_policy(p, env, factors, err);
        if (!fresh) return err;
      }
    } else {
      if (free_after.empty())
        return error_at(config::policy_path(p.name),
                        "no free policy slot (capacities/policies is " +
                            std::to_string(slot_capacity_) +
                            "; slots of removed policies return after a grace period)");
      slot = free_after.back();
      free_after.pop_back();
      fresh = compile_policy(p, env, {}, err);
      if (!fresh) return err;
    }
    new_slot_by_name.emplace(p.name, slot);
    planned.push_back({slot, std::move(fresh)});
  }

  // Steering.
  struct IndexedExact {
    ExactEntry e;
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
  bool has_exact = false, exact_dscp = false, has_dst_any = false, dst_any_dscp = false;
  uint32_t default4 = kNoSlot;
  exact.reserve(cfg.steering.size());
  for (size_t i = 0; i < cfg.steering.size(); ++i) {
    const config::SteeringRule& r = cfg.steering[i];
    auto rpath = [&] { return config::rule_path(r, i); };
    auto sit = new_slot_by_name.find(r.policy);
    if (sit == new_slot_by_name.end())
      return error_at(rpath() + "/policy", "unknown policy '" + r.policy + "'");
    const uint32_t slot = sit->second;
    if (r.dscp && *r.dscp > 63) return error_at(rpath() + "/dscp", "DSCP is 0..63");
    const uint8_t dscp = r.dscp ? *r.dscp : kAnyDscp;
    const bool needs_dst = r.kind != config::SteeringKind::qp_range || r.has_dst;
    if (needs_dst && r.dst.family == net::Family::none)
      return error_at(rpath() + "/dst", "destination address missing");
    switch (r.kind) {
      case config::SteeringKind::exact:
        if (r.dest_qp > config::kMaxQp) return error_at(rpath() + "/dest-qp", "DestQP is 24 bits");
        exact.push_back({{make_exact_key(r.dst, r.dest_qp, dscp), slot}, i});
        has_exact = true;
        exact_dscp |= r.dscp.has_value();
        break;
      case config::SteeringKind::dst_any_qp:
        exact.push_back({{make_exact_key(r.dst, kAnyQp, dscp), slot}, i});
        has_dst_any = true;
        dst_any_dscp |= r.dscp.has_value();
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
  std::sort(exact.begin(), exact.end(), [](const IndexedExact& a, const IndexedExact& b) {
    return key_less(a.e.key, b.e.key);
  });
  for (size_t i = 1; i < exact.size(); ++i)
    if (key_equal(exact[i - 1].e.key, exact[i].e.key))
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

  // Local SIDs.
  if (cfg.local_sids.size() > caps.local_sids)
    return error_at("/srv6gw:gateway/local-sids",
                    "local SIDs exceed capacities/local-sids " + std::to_string(caps.local_sids));
  std::vector<LocalSidTable::Entry> sid_entries;
  for (const config::LocalSid& ls : cfg.local_sids) {
    for (const auto& e : sid_entries)
      if (e.sid == ls.sid) return error_at(config::local_sid_path(ls.sid), "duplicate local SID");
    sid_entries.push_back({ls.sid, ls.behavior});
  }

  // Immutable objects of the new view.
  const View* old_view = view_.load(std::memory_order_relaxed);
  auto make_view = [&]() {
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
  };
  auto final_view = make_view();
  // Unchanged immutable parts are shared with the running view (their rules are the same).
  final_view->qp_ranges_owner =
      qp_rules.empty() ? nullptr : std::make_shared<const QpRangeTable>(qp_rules);
  final_view->prefix6_owner =
      prefix6_rules.empty() ? nullptr : std::make_shared<const PrefixTable>(prefix6_rules);
  final_view->dscp_prefix4_owner =
      dscp4_rules.empty() ? nullptr : std::make_shared<const PrefixTable>(dscp4_rules);
  final_view->dscp_prefix6_owner =
      dscp6_rules.empty() ? nullptr : std::make_shared<const PrefixTable>(dscp6_rules);
  final_view->local_sids_owner = std::make_shared<const LocalSidTable>(std::move(sid_entries));
  final_view->steering.qp_ranges = final_view->qp_ranges_owner.get();
  final_view->steering.prefix6 = final_view->prefix6_owner.get();
  final_view->steering.dscp_prefix4 = final_view->dscp_prefix4_owner.get();
  final_view->steering.dscp_prefix6 = final_view->dscp_prefix6_owner.get();
  final_view->local_sids = final_view->local_sids_owner.get();
  final_view->steering.has_exact = has_exact;
  final_view->steering.exact_dscp = exact_dscp;
  final_view->steering.has_dst_any = has_dst_any;
  final_view->steering.dst_any_dscp = dst_any_dscp;
  final_view->steering.has_prefix4 = !lpm4.empty();
  final_view->steering.default4 = default4;
  // While the hash and LPM change under the workers, the flags must cover both the old and
  // the new entries: the transitional view is the final one with the flags OR-ed.
  auto transitional = std::make_unique<View>(*final_view);
  transitional->generation = next_generation_++;
  {
    SteeringView& s = transitional->steering;
    const SteeringView& o = old_view->steering;
    s.has_exact |= o.has_exact;
    s.exact_dscp |= o.exact_dscp;
    s.has_dst_any |= o.has_dst_any;
    s.dst_any_dscp |= o.dst_any_dscp;
    s.has_prefix4 |= o.has_prefix4;
  }

  // Diff of the in-place tables against what is installed.
  std::vector<ExactEntry> exact_delete, exact_upsert;
  {
    size_t a = 0, b = 0;
    while (a < installed_exact_.size() || b < exact.size()) {
      if (b == exact.size() ||
          (a < installed_exact_.size() && key_less(installed_exact_[a].key, exact[b].e.key))) {
        exact_delete.push_back(installed_exact_[a++]);
      } else if (a == installed_exact_.size() ||
                 key_less(exact[b].e.key, installed_exact_[a].key)) {
        exact_upsert.push_back(exact[b++].e);
      } else {
        if (installed_exact_[a].slot != exact[b].e.slot) exact_upsert.push_back(exact[b].e);
        ++a;
        ++b;
      }
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
  auto installed_slot = [&](const ExactKey& k) -> uint32_t {
    auto it =
        std::lower_bound(installed_exact_.begin(), installed_exact_.end(), k,
                         [](const ExactEntry& e, const ExactKey& x) { return key_less(e.key, x); });
    return it != installed_exact_.end() && key_equal(it->key, k) ? it->slot : kNoSlot;
  };
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
  std::vector<std::pair<uint32_t, const CompiledPolicy*>> replaced;  // slot, previous object
  for (Planned& pl : planned) {
    if (!pl.fresh) continue;
    replaced.emplace_back(pl.slot, slots_[pl.slot].load(std::memory_order_relaxed));
    slots_[pl.slot].store(pl.fresh.release(), std::memory_order_release);
  }
  // 2. Transitional view (new immutable tables, flags covering old and new entries).
  const View* trans_ptr = transitional.release();
  view_.store(trans_ptr, std::memory_order_release);

  // 3. In-place tables: deletes first (those matches are gone in the new configuration, and
  //    it keeps the peak occupancy at max(old, new)), then inserts/updates. An update of an
  //    existing key's data is a single atomic store in the lock-free rte_hash.
  size_t exact_deleted = 0, exact_upserted = 0, lpm_deleted = 0, lpm_upserted = 0;
  std::optional<config::ConfigError> failure;
  for (; exact_deleted < exact_delete.size(); ++exact_deleted)
    rte_hash_del_key(exact_, &exact_delete[exact_deleted].key);
  for (; !failure && exact_upserted < exact_upsert.size(); ++exact_upserted) {
    const ExactEntry& e = exact_upsert[exact_upserted];
    int rc = rte_hash_add_key_data(exact_, &e.key, slot_data(e.slot));
    // Key slots of deleted entries come back once the workers passed a quiescent state;
    // give them a bounded moment (the hash reclaims its defer queue on each attempt).
    for (int tries = 0; rc == -ENOSPC && tries < 2000; ++tries) {
      rte_delay_us_sleep(50);
      rc = rte_hash_add_key_data(exact_, &e.key, slot_data(e.slot));
    }
    if (rc < 0) {
      failure = error_at(kSteeringPath,
                         std::string("exact steering table insert failed: ") + rte_strerror(-rc));
      break;
    }
  }
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
    while (exact_upserted-- > 0) {
      const ExactEntry& e = exact_upsert[exact_upserted];
      const uint32_t prev = installed_slot(e.key);
      if (prev == kNoSlot)
        rte_hash_del_key(exact_, &e.key);
      else
        rte_hash_add_key_data(exact_, &e.key, slot_data(prev));
    }
    while (exact_deleted-- > 0) {
      const ExactEntry& e = exact_delete[exact_deleted];
      int rc = rte_hash_add_key_data(exact_, &e.key, slot_data(e.slot));
      for (int tries = 0; rc == -ENOSPC && tries < 2000; ++tries) {
        rte_delay_us_sleep(50);
        rc = rte_hash_add_key_data(exact_, &e.key, slot_data(e.slot));
      }
    }
    view_.store(old_view, std::memory_order_release);
    std::vector<const CompiledPolicy*> fresh_objects;
    for (auto& [slot, prev] : replaced) {
      fresh_objects.push_back(slots_[slot].load(std::memory_order_relaxed));
      slots_[slot].store(prev, std::memory_order_release);
    }
    retire([trans_ptr, fresh_objects] {
      delete trans_ptr;
      for (const CompiledPolicy* p : fresh_objects) delete p;
    });
    return failure;
  }

  // 4. Final view (exact flags).
  view_.store(final_view.release(), std::memory_order_release);

  // 5. Removed policies leave their slots; the slot index is reusable after a grace period
  //    (a worker may still hold it from a steering lookup made before the deletes).
  std::vector<const CompiledPolicy*> to_free;
  std::vector<uint32_t> freed_slots;
  for (const auto& [name, slot] : slot_by_name_) {
    if (new_slot_by_name.count(name)) continue;
    to_free.push_back(slots_[slot].load(std::memory_order_relaxed));
    slots_[slot].store(nullptr, std::memory_order_release);
    freed_slots.push_back(slot);
  }
  for (auto& [slot, prev] : replaced)
    if (prev) to_free.push_back(prev);
  retire([this, old_view, trans_ptr, to_free, freed_slots] {
    delete old_view;
    delete trans_ptr;
    for (const CompiledPolicy* p : to_free) delete p;
    free_slots_.insert(free_slots_.end(), freed_slots.begin(), freed_slots.end());
  });

  // Commit the control-side state.
  free_slots_ = std::move(free_after);
  slot_by_name_ = std::move(new_slot_by_name);
  installed_exact_.clear();
  installed_exact_.reserve(exact.size());
  for (const IndexedExact& e : exact) installed_exact_.push_back(e.e);
  installed_lpm4_.clear();
  for (const IndexedLpm4& e : lpm4) installed_lpm4_.push_back(e.e);
  running_ = cfg;
  env_ = env;
  has_config_ = true;
  return std::nullopt;
}

}  // namespace srv6gw::policy
