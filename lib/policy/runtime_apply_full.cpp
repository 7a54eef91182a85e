// SPDX-License-Identifier: BSD-3-Clause
// The full apply path: the whole configuration is compiled into new steering tables and
// diffed against what is installed (O(configuration)). Taken at start, for QP-range and prefix
// changes, and whenever a delta does not match what is installed.
#include <rte_errno.h>
#include <rte_lpm.h>

#include <algorithm>
#include <tuple>

#include "config/validate.hpp"
#include "policy/runtime.hpp"
#include "policy/runtime_internal.hpp"

namespace srv6gw::policy {

using namespace runtime_detail;

namespace {
uint32_t mask4(uint32_t ip, uint8_t depth) {
  return depth == 0 ? 0 : ip & (~uint32_t(0) << (32 - depth));
}
}  // namespace

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
  std::vector<bool> stays(exact_->positions());  // by entry position
  size_t kept = 0;                               // installed keys that stay
  for (const IndexedExact& x : exact) {
    uint32_t prev = kNoSlot;
    const int64_t pos = find_exact(*exact_, x.key, prev);
    if (pos >= 0) {
      ++kept;
      stays[size_t(pos)] = true;
    }
    if (prev != x.slot) exact_upsert.push_back({x.key, prev, x.slot});
  }
  if (kept < exact_counts_.entries()) {
    exact_->for_each([&](uint32_t pos, uint64_t head, const uint8_t* addr16, uint32_t slot) {
      if (stays[pos]) return;
      ExactKey k;
      std::memcpy(static_cast<void*>(&k), &head, sizeof head);
      std::memcpy(k.addr, addr16, sizeof k.addr);
      exact_delete.push_back({k, slot, kNoSlot});
    });
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

}  // namespace srv6gw::policy
