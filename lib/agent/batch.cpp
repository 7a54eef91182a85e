// SPDX-License-Identifier: BSD-3-Clause
// A batch edits a copy of the running configuration in place: keyed lookups through hash
// indexes, deletions marked and compacted once at the end, so that a batch of k changes on a
// configuration of n entries costs O(n + k) (the copy) rather than O(n * k).
#include "agent/batch.hpp"

#include <algorithm>
#include <numeric>
#include <unordered_set>

#include "agent/convert.hpp"

namespace srv6gw::agent {

const std::vector<uint32_t>& SteeringIndex::by_id(
    const std::vector<config::SteeringRule>& rules) const {
  std::call_once(sorted_once_, [&] {
    sorted_.resize(rules.size());
    std::iota(sorted_.begin(), sorted_.end(), 0u);
    std::sort(sorted_.begin(), sorted_.end(), [&](uint32_t a, uint32_t b) {
      return rules[a].id != rules[b].id ? rules[a].id < rules[b].id : a < b;
    });
  });
  return sorted_;
}

namespace {

std::shared_ptr<SteeringIndex> index_rules(const std::vector<config::SteeringRule>& rules) {
  auto index = std::make_shared<SteeringIndex>();
  index->position.reserve(rules.size());
  for (size_t i = 0; i < rules.size(); ++i) index->position.emplace(rules[i].id, uint32_t(i));
  return index;
}

std::string change_field(int i, const char* kind, const std::string& field) {
  std::string s = "changes[" + std::to_string(i) + "]." + kind;
  if (!field.empty()) s += "." + field;
  return s;
}

BatchError invalid(std::string message) {
  return BatchError{BatchCode::invalid_argument, std::move(message)};
}

BatchError not_found(std::string message) {
  return BatchError{BatchCode::not_found, std::move(message)};
}

BatchError field_error(int i, const char* kind, const FieldError& fe) {
  return invalid(change_field(i, kind, fe.field) + ": " + fe.message + " (" + fe.yang + ")");
}

template <class T>
void compact(std::vector<T>& items, const std::vector<char>& dead) {
  size_t out = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (dead[i]) continue;
    if (out != i) items[out] = std::move(items[i]);
    ++out;
  }
  items.resize(out);
}

// "<prefix>'key']rest" -> key and rest; false when `path` does not start with `prefix`.
bool split_keyed(std::string_view path, std::string_view prefix, std::string& key,
                 std::string_view& rest) {
  if (path.substr(0, prefix.size()) != prefix) return false;
  path.remove_prefix(prefix.size());
  if (path.empty() || (path[0] != '\'' && path[0] != '"')) return false;
  const char q = path[0];
  const auto end = path.find(q, 1);
  if (end == std::string_view::npos || end + 1 >= path.size() || path[end + 1] != ']') return false;
  key = std::string(path.substr(1, end - 1));
  rest = path.substr(end + 2);
  return true;
}

}  // namespace

std::shared_ptr<AgentState> make_state(config::GatewayConfig cfg, uint64_t generation) {
  auto state = std::make_shared<AgentState>();
  state->config = std::move(cfg);
  state->generation = generation;
  state->steering_index = index_rules(state->config.steering);
  return state;
}

struct Batch::Edit {
  config::GatewayConfig cfg;

  bool policies_indexed = false;
  std::unordered_map<std::string, size_t> policy_pos;
  std::vector<char> policy_dead;
  bool policies_deleted = false;

  std::shared_ptr<SteeringIndex> rules;  // copy of the base index, made on first rule change
  std::vector<char> rule_dead;
  bool rules_deleted = false;

  bool local_sids_indexed = false;
  std::map<net::Ipv6Addr, size_t> local_sid_pos;
  std::vector<char> local_sid_dead;
  bool local_sids_deleted = false;

  void index_policies() {
    if (policies_indexed) return;
    policies_indexed = true;
    policy_pos.reserve(cfg.policies.size());
    for (size_t i = 0; i < cfg.policies.size(); ++i) policy_pos.emplace(cfg.policies[i].name, i);
    policy_dead.assign(cfg.policies.size(), 0);
  }

  void index_rules_from(const SteeringIndex& base) {
    if (rules) return;
    rules = std::make_shared<SteeringIndex>();
    rules->position = base.position;
    rule_dead.assign(cfg.steering.size(), 0);
  }

  void index_local_sids() {
    if (local_sids_indexed) return;
    local_sids_indexed = true;
    for (size_t i = 0; i < cfg.local_sids.size(); ++i)
      local_sid_pos.emplace(cfg.local_sids[i].sid, i);
    local_sid_dead.assign(cfg.local_sids.size(), 0);
  }
};

Batch::Batch(const AgentState& base, const ConfigIndex& index,
             const google::protobuf::RepeatedPtrField<v1::Change>& changes)
    : base_(base), index_(index), changes_(changes) {}

Batch::~Batch() = default;

std::optional<BatchError> Batch::run(Validation validation) {
  edit_ = std::make_unique<Edit>();
  Edit& ed = *edit_;
  ed.cfg = base_.config;
  config::GatewayConfig& cfg = ed.cfg;

  for (int i = 0; i < changes_.size(); ++i) {
    const v1::Change& c = changes_[i];
    switch (c.change_case()) {
      case v1::Change::kUpsertPolicy: {
        config::Policy p;
        FieldError fe;
        if (!from_proto(c.upsert_policy(), p, fe)) return field_error(i, "upsert_policy", fe);
        ed.index_policies();
        policy_change_[p.name] = i;
        if (auto it = ed.policy_pos.find(p.name); it != ed.policy_pos.end()) {
          cfg.policies[it->second] = std::move(p);
          ed.policy_dead[it->second] = 0;
        } else {
          ed.policy_pos.emplace(p.name, cfg.policies.size());
          cfg.policies.push_back(std::move(p));
          ed.policy_dead.push_back(0);
        }
        ++counts_.policies_upserted;
        break;
      }
      case v1::Change::kDeletePolicy: {
        const std::string& name = c.delete_policy();
        ed.index_policies();
        auto it = ed.policy_pos.find(name);
        if (it == ed.policy_pos.end() || ed.policy_dead[it->second]) {
          return not_found(change_field(i, "delete_policy", "") + ": no policy '" + name + "' (" +
                           config::policy_path(name) + ")");
        }
        ed.policy_dead[it->second] = 1;
        ed.policies_deleted = true;
        policy_change_[name] = i;
        ++counts_.policies_deleted;
        break;
      }
      case v1::Change::kUpsertSteering: {
        config::SteeringRule r;
        FieldError fe;
        if (!from_proto(c.upsert_steering(), r, fe)) return field_error(i, "upsert_steering", fe);
        ed.index_rules_from(*base_.steering_index);
        rule_change_[r.id] = i;
        if (auto it = ed.rules->position.find(r.id); it != ed.rules->position.end()) {
          cfg.steering[it->second] = std::move(r);
          ed.rule_dead[it->second] = 0;
        } else {
          ed.rules->position.emplace(r.id, uint32_t(cfg.steering.size()));
          cfg.steering.push_back(std::move(r));
          ed.rule_dead.push_back(0);
        }
        ++counts_.steering_upserted;
        break;
      }
      case v1::Change::kDeleteSteering: {
        const uint32_t id = c.delete_steering();
        config::SteeringRule key;
        key.id = id;
        if (id == 0) {
          return invalid(change_field(i, "delete_steering", "") +
                         ": rule ids are 1..4294967295, not 0");
        }
        ed.index_rules_from(*base_.steering_index);
        auto it = ed.rules->position.find(id);
        if (it == ed.rules->position.end() || ed.rule_dead[it->second]) {
          return not_found(change_field(i, "delete_steering", "") + ": no steering rule " +
                           std::to_string(id) + " (" + config::rule_path(key, 0) + ")");
        }
        ed.rule_dead[it->second] = 1;
        ed.rules_deleted = true;
        rule_change_[id] = i;
        ++counts_.steering_deleted;
        break;
      }
      case v1::Change::kUpsertLocalSid: {
        config::LocalSid ls;
        FieldError fe;
        if (!from_proto(c.upsert_local_sid(), ls, fe))
          return field_error(i, "upsert_local_sid", fe);
        ed.index_local_sids();
        local_sid_change_[ls.sid] = i;
        if (auto it = ed.local_sid_pos.find(ls.sid); it != ed.local_sid_pos.end()) {
          cfg.local_sids[it->second] = ls;
          ed.local_sid_dead[it->second] = 0;
        } else {
          ed.local_sid_pos.emplace(ls.sid, cfg.local_sids.size());
          cfg.local_sids.push_back(ls);
          ed.local_sid_dead.push_back(0);
        }
        ++counts_.local_sids_upserted;
        break;
      }
      case v1::Change::kDeleteLocalSid: {
        auto sid = net::parse_ipv6(c.delete_local_sid());
        if (!sid) {
          return invalid(change_field(i, "delete_local_sid", "") + ": '" + c.delete_local_sid() +
                         "' is not an IPv6 address");
        }
        ed.index_local_sids();
        auto it = ed.local_sid_pos.find(*sid);
        if (it == ed.local_sid_pos.end() || ed.local_sid_dead[it->second]) {
          return not_found(change_field(i, "delete_local_sid", "") + ": no local SID " +
                           net::to_string(*sid) + " (" + config::local_sid_path(*sid) + ")");
        }
        ed.local_sid_dead[it->second] = 1;
        ed.local_sids_deleted = true;
        local_sid_change_[*sid] = i;
        ++counts_.local_sids_deleted;
        break;
      }
      default:
        return invalid("changes[" + std::to_string(i) +
                       "]: empty change: set one of upsert_policy, delete_policy, "
                       "upsert_steering, delete_steering, upsert_local_sid, delete_local_sid");
    }
  }

  if (ed.policies_deleted) compact(cfg.policies, ed.policy_dead);
  if (ed.rules_deleted) {
    compact(cfg.steering, ed.rule_dead);
    ed.rules = index_rules(cfg.steering);
  }
  if (ed.local_sids_deleted) compact(cfg.local_sids, ed.local_sid_dead);
  build_delta();

  if (validation == Validation::full) {
    // A deleted policy must not leave rules pointing at it. config::validate() would refuse
    // the result too, but would name the rule; the operator's mistake is the delete.
    for (const PolicyDelta& d : delta_.policies) {
      if (!d.before || d.after) continue;
      for (size_t k = 0; k < cfg.steering.size(); ++k) {
        const config::SteeringRule& r = cfg.steering[k];
        if (r.policy == d.before->name)
          return still_used(r.policy, r.id, config::rule_path(r, k) + "/policy");
      }
    }
    if (auto e = config::validate(cfg)) return invalid(describe(*e));
    return std::nullopt;
  }
  if (auto e = index_.check(base_.config, delta_)) {
    if (!e->policy_in_use.empty())
      return still_used(e->policy_in_use, e->user_rule_id, e->error.path);
    return invalid(describe(e->error));
  }
  return std::nullopt;
}

std::optional<BatchError> Batch::still_used(const std::string& policy, uint32_t rule_id,
                                            const std::string& rule_path) const {
  return invalid(change_field(policy_change_.at(policy), "delete_policy", "") + ": policy '" +
                 policy + "' is still used by steering rule " + std::to_string(rule_id) + " (" +
                 rule_path + "): delete or re-point its rules in the same batch");
}

void Batch::build_delta() {
  const config::GatewayConfig& cfg = edit_->cfg;
  const config::GatewayConfig& before = base_.config;
  delta_ = ConfigDelta{};
  if (!policy_change_.empty()) {
    std::unordered_map<std::string_view, const config::Policy*> old_by_name, new_by_name;
    for (const config::Policy& p : before.policies) old_by_name.emplace(p.name, &p);
    for (const config::Policy& p : cfg.policies) new_by_name.emplace(p.name, &p);
    for (const auto& [name, change] : policy_change_) {
      PolicyDelta d;
      if (auto it = old_by_name.find(name); it != old_by_name.end()) d.before = it->second;
      if (auto it = new_by_name.find(name); it != new_by_name.end()) d.after = it->second;
      if (d.before && d.after && *d.before == *d.after) continue;
      if (d.before || d.after) delta_.policies.push_back(d);
    }
    std::sort(delta_.policies.begin(), delta_.policies.end(),
              [&](const PolicyDelta& a, const PolicyDelta& b) {
                return policy_change_.at(a.after ? a.after->name : a.before->name) <
                       policy_change_.at(b.after ? b.after->name : b.before->name);
              });
  }
  if (!rule_change_.empty()) {
    const SteeringIndex& now = edit_->rules ? *edit_->rules : *base_.steering_index;
    delta_.rules.reserve(rule_change_.size());
    for (const auto& [id, change] : rule_change_) {
      RuleDelta d;
      if (auto it = base_.steering_index->position.find(id);
          it != base_.steering_index->position.end())
        d.before = &before.steering[it->second];
      if (auto it = now.position.find(id); it != now.position.end()) {
        d.after = &cfg.steering[it->second];
        d.after_index = it->second;
      }
      if (d.before && d.after && *d.before == *d.after) continue;
      if (d.before || d.after) delta_.rules.push_back(d);
    }
    // Configuration order, as config::validate() meets them (deletions last): of two rules
    // of the batch with one match, the later is the one refused.
    std::sort(delta_.rules.begin(), delta_.rules.end(), [](const RuleDelta& a, const RuleDelta& b) {
      const size_t ka = a.after ? a.after_index : SIZE_MAX, kb = b.after ? b.after_index : SIZE_MAX;
      return ka != kb ? ka < kb : (a.before ? a.before->id : 0) < (b.before ? b.before->id : 0);
    });
  }
  if (!local_sid_change_.empty()) {
    std::map<net::Ipv6Addr, const config::LocalSid*> old_by_sid, new_by_sid;
    for (const config::LocalSid& ls : before.local_sids) old_by_sid.emplace(ls.sid, &ls);
    for (const config::LocalSid& ls : cfg.local_sids) new_by_sid.emplace(ls.sid, &ls);
    for (const auto& [sid, change] : local_sid_change_) {
      LocalSidDelta d;
      if (auto it = old_by_sid.find(sid); it != old_by_sid.end()) d.before = it->second;
      if (auto it = new_by_sid.find(sid); it != new_by_sid.end()) d.after = it->second;
      if (d.before && d.after && *d.before == *d.after) continue;
      if (d.before || d.after) delta_.local_sids.push_back(d);
    }
  }
}

std::string Batch::describe(const config::ConfigError& e) const {
  const std::string where = " (" + e.path + ")";
  std::string key;
  std::string_view rest;
  if (split_keyed(e.path, "/srv6gw:gateway/policies/policy[name=", key, rest)) {
    if (auto it = policy_change_.find(key); it != policy_change_.end()) {
      const v1::Change& c = changes_[it->second];
      if (c.has_upsert_policy()) {
        // Duplicates are reported on their second occurrence.
        const bool last = e.message.rfind("duplicate", 0) == 0 ||
                          e.message.find("appears twice") != std::string::npos;
        return change_field(it->second, "upsert_policy",
                            policy_field(c.upsert_policy(), rest, last)) +
               ": " + e.message + where;
      }
      return change_field(it->second, "delete_policy", "") + ": " + e.message + where;
    }
  } else if (split_keyed(e.path, "/srv6gw:gateway/steering/rule[id=", key, rest)) {
    uint32_t id = 0;
    try {
      id = uint32_t(std::stoul(key));
    } catch (...) {
      id = 0;
    }
    if (auto it = rule_change_.find(id); it != rule_change_.end()) {
      const v1::Change& c = changes_[it->second];
      const char* kind = c.has_upsert_steering() ? "upsert_steering" : "delete_steering";
      return change_field(it->second, kind, c.has_upsert_steering() ? rule_field(rest) : "") +
             ": " + e.message + where;
    }
  } else if (split_keyed(e.path, "/srv6gw:gateway/local-sids/local-sid[sid=", key, rest)) {
    auto sid = net::parse_ipv6(key);
    if (auto it = sid ? local_sid_change_.find(*sid) : local_sid_change_.end();
        it != local_sid_change_.end()) {
      const v1::Change& c = changes_[it->second];
      const char* kind = c.has_upsert_local_sid() ? "upsert_local_sid" : "delete_local_sid";
      return change_field(it->second, kind, c.has_upsert_local_sid() ? local_sid_field(rest) : "") +
             ": " + e.message + where;
    }
  }
  return "configuration refused: " + e.message + where;
}

const config::GatewayConfig& Batch::candidate() const {
  return edit_->cfg;
}

std::shared_ptr<AgentState> Batch::next(uint64_t generation) {
  auto state = std::make_shared<AgentState>();
  state->config = std::move(edit_->cfg);
  state->generation = generation;
  if (edit_->rules) {
    state->steering_index = std::move(edit_->rules);
  } else {
    state->steering_index = base_.steering_index;
  }
  return state;
}

}  // namespace srv6gw::agent
