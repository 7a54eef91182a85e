// SPDX-License-Identifier: BSD-3-Clause
// The delta apply path: only the exact and dst-any rules that changed are edited in the
// exact table (O(policies + local SIDs + changes)); the immutable QP-range and prefix tables are
// shared with the running view. Anything it cannot do exactly falls back to the full path.
#include <rte_hash_crc.h>

#include <unordered_map>

#include "policy/runtime.hpp"
#include "policy/runtime_internal.hpp"

namespace srv6gw::policy {

using namespace runtime_detail;

namespace {

// The batch's exact-table operations by key: open addressing over one flat array of indexes
// into `ops` (a node-based map cost a cache miss per lookup and per node freed, the largest
// share of a 10k-change delta after the exact table itself). Sized for every key of the batch.
constexpr uint32_t kNoOp = ~uint32_t(0);
template <class Op>  // Runtime::ExactOp
class OpIndex {
 public:
  OpIndex(size_t keys, const std::vector<Op>& ops) : ops_(ops) {
    size_t capacity = 16;
    while (capacity < 2 * keys) capacity <<= 1;
    index_.assign(capacity, kNoOp);
    mask_ = capacity - 1;
  }
  // The index of k's operation, or the empty entry (kNoOp) to set to it.
  uint32_t& find(const ExactKey& k) {
    for (size_t i = rte_hash_crc(&k, sizeof k, 0) & mask_;; i = (i + 1) & mask_) {
      uint32_t& e = index_[i];
      if (e == kNoOp || key_equal(ops_[e].key, k)) return e;
    }
  }

 private:
  const std::vector<Op>& ops_;
  std::vector<uint32_t> index_;
  size_t mask_ = 0;
};

}  // namespace

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
  std::vector<ExactOp> ops;
  ops.reserve(delta.rules.size());
  OpIndex<ExactOp> op_of(delta.rules.size(), ops);
  ExactCounts counts = exact_counts_;
  std::unordered_map<uint32_t, int64_t> users_delta;  // slot -> change of its rule count
  auto key_of = [](const config::SteeringRule& r) {
    return make_exact_key(r.dst, r.kind == config::SteeringKind::exact ? r.dest_qp : kAnyQp,
                          r.dscp ? *r.dscp : kAnyDscp);
  };
  // What the table holds for each key of the batch, looked up in bulk (lookup_slots).
  std::vector<ExactKey> keys;
  std::vector<uint32_t> installed;
  auto look_up = [&](bool after) {
    keys.clear();
    for (const SteeringDelta::Change& c : delta.rules)
      if (const config::SteeringRule* r = after ? c.after : c.before) keys.push_back(key_of(*r));
    installed.resize(keys.size());
    lookup_slots(*exact_, keys, installed);
  };

  look_up(/*after=*/false);
  size_t n = 0;
  for (const SteeringDelta::Change& c : delta.rules) {
    if (!c.before) continue;
    const config::SteeringRule& r = *c.before;
    const ExactKey& k = keys[n];
    const uint32_t slot = installed[n++];
    auto sit = slot_by_name_.find(r.policy);
    uint32_t& op = op_of.find(k);
    if (sit == slot_by_name_.end() || slot != sit->second || op != kNoOp)
      return apply_locked(cfg, /*validated=*/true);  // not what is installed (see above)
    op = uint32_t(ops.size());
    ops.push_back({k, slot, kNoSlot});
    counts.add(r, -1);
    --users_delta[slot];
  }

  PolicyPlan plan;
  if (auto e = plan_policies(cfg, env, plan)) return e;

  // The data plane's own checks of each new rule, as the full path makes them.
  look_up(/*after=*/true);
  n = 0;
  for (const SteeringDelta::Change& c : delta.rules) {
    if (!c.after) continue;
    const config::SteeringRule& r = *c.after;
    const ExactKey& k = keys[n];
    const uint32_t slot = installed[n++];
    auto rpath = [&] { return config::rule_path(r, c.after_index); };
    auto sit = plan.slot_by_name.find(r.policy);
    if (sit == plan.slot_by_name.end())
      return error_at(rpath() + "/policy", "unknown policy '" + r.policy + "'");
    if (r.dscp && *r.dscp > 63) return error_at(rpath() + "/dscp", "DSCP is 0..63");
    if (r.dst.family == net::Family::none)
      return error_at(rpath() + "/dst", "destination address missing");
    if (r.kind == config::SteeringKind::exact && r.dest_qp > config::kMaxQp)
      return error_at(rpath() + "/dest-qp", "DestQP is 24 bits");
    if (uint32_t& op = op_of.find(k); op != kNoOp) {
      if (ops[op].new_slot != kNoSlot) return error_at(rpath(), "duplicate steering match");
      ops[op].new_slot = sit->second;
    } else {
      if (slot != kNoSlot) return error_at(rpath(), "duplicate steering match");
      op = uint32_t(ops.size());
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
