// SPDX-License-Identifier: BSD-3-Clause
// A batch is reduced to its net effect per key (a Changeset) and checked against the indexes
// of the running configuration, without building the result: O(k) for k changes whatever the
// size of the configuration. The agent then applies the Changeset in place to a spare state.
#include "agent/batch.hpp"

#include <algorithm>
#include <chrono>
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
  for (size_t i = 0; i < rules.size(); ++i) index->position.try_emplace(rules[i].id, uint32_t(i));
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

namespace {

// Room to add rules in place without moving every rule to a new allocation at the first
// addition (amortised afterwards by the vector's growth).
// Room for `needed` rules and some headroom, in one allocation that asks for huge pages: a
// 100k-rule vector is ~9 MB, and the vector's own doubling would copy every rule at each
// power of two into fresh 4 KiB pages (a fault each, ~10 us here).
void reserve_rules(std::vector<config::SteeringRule>& rules, size_t needed) {
  const size_t capacity = needed + std::max<size_t>(needed / 4, 1024);
  if (capacity <= rules.capacity()) return;
  std::vector<config::SteeringRule> grown;
  grown.reserve(capacity);
  config::advise_huge_pages(grown.data(), capacity * sizeof(config::SteeringRule));
  grown.insert(grown.end(), std::make_move_iterator(rules.begin()),
               std::make_move_iterator(rules.end()));
  rules.swap(grown);
}

void reserve_headroom(std::vector<config::SteeringRule>& rules) {
  reserve_rules(rules, rules.size());
}

}  // namespace

std::shared_ptr<AgentState> make_state(config::GatewayConfig cfg, uint64_t generation) {
  auto state = std::make_shared<AgentState>();
  state->config = std::move(cfg);
  reserve_headroom(state->config.steering);
  state->generation = generation;
  state->steering_index = index_rules(state->config.steering);
  return state;
}

std::shared_ptr<AgentState> copy_state(const AgentState& s) {
  auto state = std::make_shared<AgentState>();
  state->config = s.config;
  reserve_headroom(state->config.steering);
  state->generation = s.generation;
  state->steering_index = std::make_shared<SteeringIndex>();
  state->steering_index->position = s.steering_index->position;
  return state;
}

void apply_changeset(const Changeset& changes, AgentState& state) {
  config::GatewayConfig& cfg = state.config;
  // A fresh index object: the by-id order of the previous contents must not be reused.
  auto index = std::make_shared<SteeringIndex>();
  index->position = std::move(state.steering_index->position);
  state.steering_index = index;
  auto& position = index->position;
  if (changes.rules_added > 0) {
    if (cfg.steering.size() + changes.rules_added > cfg.steering.capacity())
      reserve_rules(cfg.steering, cfg.steering.size() + changes.rules_added);
    position.reserve(position.size() + changes.rules_added);
  }
  for (const auto& [id, rule] : changes.rules) {
    const uint32_t* at = config::find_value(position, id);
    if (rule) {
      if (at) {
        cfg.steering[*at] = *rule;
      } else {
        position.try_emplace(id, uint32_t(cfg.steering.size()));
        cfg.steering.push_back(*rule);
      }
    } else if (at) {
      const uint32_t pos = *at;
      position.erase(id);
      if (pos + 1 != cfg.steering.size()) {
        cfg.steering[pos] = std::move(cfg.steering.back());
        position[cfg.steering[pos].id] = pos;
      }
      cfg.steering.pop_back();
    }
  }
  // Policies and local SIDs are few (capacities of 64k at most): kept in order. (Lambdas take
  // the structured bindings through init-captures: clang-14, the fuzz build, cannot capture
  // them directly.)
  for (const auto& [name, policy] : changes.policies) {
    auto it = std::find_if(cfg.policies.begin(), cfg.policies.end(),
                           [&name = name](const config::Policy& p) { return p.name == name; });
    if (policy) {
      if (it != cfg.policies.end())
        *it = *policy;
      else
        cfg.policies.push_back(*policy);
    } else if (it != cfg.policies.end()) {
      cfg.policies.erase(it);
    }
  }
  for (const auto& [sid, local_sid] : changes.local_sids) {
    auto it = std::find_if(cfg.local_sids.begin(), cfg.local_sids.end(),
                           [&sid = sid](const config::LocalSid& ls) { return ls.sid == sid; });
    if (local_sid) {
      if (it != cfg.local_sids.end())
        *it = *local_sid;
      else
        cfg.local_sids.push_back(*local_sid);
    } else if (it != cfg.local_sids.end()) {
      cfg.local_sids.erase(it);
    }
  }
  for (const config::Rail& rail : changes.rails) {
    for (config::Rail& r : cfg.rails) {
      if (r.name != rail.name) continue;
      // Not in the message: the gateway-wide ports/lossless, as the loader gives every rail.
      config::Rail next = rail;
      next.host_port.lossless = r.host_port.lossless;
      next.fabric_port.lossless = r.fabric_port.lossless;
      r = std::move(next);
    }
  }
}

Batch::Batch(const AgentState& base, const config::ConfigIndex& index,
             const google::protobuf::RepeatedPtrField<v1::Change>& changes)
    : base_(base), index_(index), changes_(changes) {}

Batch::~Batch() = default;

namespace {

double ms_between(std::chrono::steady_clock::time_point a,
                  std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

std::optional<BatchError> Batch::run(Validation validation) {
  const auto t_convert = std::chrono::steady_clock::now();
  // Net effect per key; slot = position in changeset_'s vectors.
  std::unordered_map<std::string, size_t> policy_slot;
  std::map<net::Ipv6Addr, size_t> local_sid_slot;
  rule_slot_.reserve(size_t(changes_.size()));
  changeset_.rules.reserve(size_t(changes_.size()));
  auto base_has_policy = [&](const std::string& name) {
    for (const config::Policy& p : base_.config.policies)
      if (p.name == name) return true;
    return false;
  };
  auto base_has_local_sid = [&](const net::Ipv6Addr& sid) {
    for (const config::LocalSid& ls : base_.config.local_sids)
      if (ls.sid == sid) return true;
    return false;
  };

  for (int i = 0; i < changes_.size(); ++i) {
    const v1::Change& c = changes_[i];
    switch (c.change_case()) {
      case v1::Change::kUpsertPolicy: {
        config::Policy p;
        FieldError fe;
        if (!from_proto(c.upsert_policy(), p, fe)) return field_error(i, "upsert_policy", fe);
        policy_change_[p.name] = i;
        auto [it, fresh] = policy_slot.emplace(p.name, changeset_.policies.size());
        if (fresh) {
          changeset_.policies.emplace_back(p.name, std::move(p));
        } else {
          changeset_.policies[it->second].second = std::move(p);
        }
        ++counts_.policies_upserted;
        break;
      }
      case v1::Change::kDeletePolicy: {
        const std::string& name = c.delete_policy();
        auto it = policy_slot.find(name);
        const bool exists = it != policy_slot.end()
                                ? changeset_.policies[it->second].second.has_value()
                                : base_has_policy(name);
        if (!exists) {
          return not_found(change_field(i, "delete_policy", "") + ": no policy '" + name + "' (" +
                           config::policy_path(name) + ")");
        }
        if (it == policy_slot.end()) {
          policy_slot.emplace(name, changeset_.policies.size());
          changeset_.policies.emplace_back(name, std::nullopt);
        } else {
          changeset_.policies[it->second].second.reset();
        }
        policy_change_[name] = i;
        ++counts_.policies_deleted;
        break;
      }
      case v1::Change::kUpsertSteering: {
        config::SteeringRule r;
        FieldError fe;
        if (!from_proto(c.upsert_steering(), r, fe)) return field_error(i, "upsert_steering", fe);
        auto [slot, fresh] =
            rule_slot_.try_emplace(r.id, RuleSlot{uint32_t(changeset_.rules.size()), i});
        if (fresh) {
          changeset_.rules.emplace_back(r.id, std::move(r));
        } else {
          slot->second.change = i;
          changeset_.rules[slot->second.slot].second = std::move(r);
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
        RuleSlot* slot = config::find_value(rule_slot_, id);
        const bool exists = slot ? changeset_.rules[slot->slot].second.has_value()
                                 : base_.steering_index->position.contains(id);
        if (!exists) {
          return not_found(change_field(i, "delete_steering", "") + ": no steering rule " +
                           std::to_string(id) + " (" + config::rule_path(key, 0) + ")");
        }
        if (!slot) {
          rule_slot_.try_emplace(id, RuleSlot{uint32_t(changeset_.rules.size()), i});
          changeset_.rules.emplace_back(id, std::nullopt);
        } else {
          slot->change = i;
          changeset_.rules[slot->slot].second.reset();
        }
        ++counts_.steering_deleted;
        break;
      }
      case v1::Change::kUpsertLocalSid: {
        config::LocalSid ls;
        FieldError fe;
        if (!from_proto(c.upsert_local_sid(), ls, fe))
          return field_error(i, "upsert_local_sid", fe);
        local_sid_change_[ls.sid] = i;
        auto [it, fresh] = local_sid_slot.emplace(ls.sid, changeset_.local_sids.size());
        if (fresh) {
          changeset_.local_sids.emplace_back(ls.sid, ls);
        } else {
          changeset_.local_sids[it->second].second = ls;
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
        auto it = local_sid_slot.find(*sid);
        const bool exists = it != local_sid_slot.end()
                                ? changeset_.local_sids[it->second].second.has_value()
                                : base_has_local_sid(*sid);
        if (!exists) {
          return not_found(change_field(i, "delete_local_sid", "") + ": no local SID " +
                           net::to_string(*sid) + " (" + config::local_sid_path(*sid) + ")");
        }
        if (it == local_sid_slot.end()) {
          local_sid_slot.emplace(*sid, changeset_.local_sids.size());
          changeset_.local_sids.emplace_back(*sid, std::nullopt);
        } else {
          changeset_.local_sids[it->second].second.reset();
        }
        local_sid_change_[*sid] = i;
        ++counts_.local_sids_deleted;
        break;
      }
      case v1::Change::kUpsertRail: {
        config::Rail rail;
        FieldError fe;
        if (!from_proto(c.upsert_rail(), rail, fe)) return field_error(i, "upsert_rail", fe);
        const config::Rail* running = nullptr;
        for (const config::Rail& r : base_.config.rails)
          if (r.name == rail.name) running = &r;
        if (!running) {
          return not_found(change_field(i, "upsert_rail", "name") + ": no rail '" + rail.name +
                           "' (" + config::rail_path(rail.name) +
                           "): rails are set up at start; adding one needs a restart");
        }
        rail_change_[rail.name] = i;
        auto it = std::find_if(changeset_.rails.begin(), changeset_.rails.end(),
                               [&](const config::Rail& r) { return r.name == rail.name; });
        if (it != changeset_.rails.end())
          *it = std::move(rail);
        else
          changeset_.rails.push_back(std::move(rail));
        ++counts_.rails_upserted;
        break;
      }
      default:
        return invalid("changes[" + std::to_string(i) +
                       "]: empty change: set one of upsert_policy, delete_policy, "
                       "upsert_steering, delete_steering, upsert_local_sid, delete_local_sid, "
                       "upsert_rail");
    }
  }
  const auto t_delta = std::chrono::steady_clock::now();
  times_.convert_ms = ms_between(t_convert, t_delta);
  build_delta();
  const auto t_check = std::chrono::steady_clock::now();
  times_.delta_ms = ms_between(t_delta, t_check);
  struct CheckTimer {
    Times& times;
    std::chrono::steady_clock::time_point start;
    ~CheckTimer() { times.check_ms = ms_between(start, std::chrono::steady_clock::now()); }
  } check_timer{times_, t_check};

  // A rail change is checked on the whole result (rare: an operator's edit of MACs, VLAN or
  // per-rail SIDs; the indexes hold the shared tables only): O(configuration).
  if (validation == Validation::full || !changeset_.rails.empty()) {
    // The file loader's check over the whole result (tests compare it with the indexes').
    auto candidate = copy_state(base_);
    apply_changeset(changeset_, *candidate);
    const config::GatewayConfig& cfg = candidate->config;
    // A deleted policy must not leave rules pointing at it. config::validate() would refuse
    // the result too, but would name the rule; the operator's mistake is the delete.
    for (const config::PolicyDelta& d : delta_.policies) {
      if (!d.before || d.after) continue;
      for (size_t k = 0; k < cfg.steering.size(); ++k) {
        const config::SteeringRule& r = cfg.steering[k];
        if (r.policy == d.before->name)
          return still_used(r.policy, r.id, config::rule_path(r, k) + "/policy");
      }
    }
    if (auto e = config::check_rails_change(base_.config, cfg)) return invalid(describe(*e));
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
  const config::GatewayConfig& before = base_.config;
  delta_ = config::ConfigDelta{};
  for (const auto& [name, policy] : changeset_.policies) {
    config::PolicyDelta d;
    for (const config::Policy& p : before.policies)
      if (p.name == name) d.before = &p;
    if (policy) d.after = &*policy;
    if (d.before && d.after && *d.before == *d.after) continue;
    if (d.before || d.after) delta_.policies.push_back(d);
  }
  std::sort(delta_.policies.begin(), delta_.policies.end(),
            [&](const config::PolicyDelta& a, const config::PolicyDelta& b) {
              return policy_change_.at(a.after ? a.after->name : a.before->name) <
                     policy_change_.at(b.after ? b.after->name : b.before->name);
            });
  // Where each rule ends up (apply_changeset's order), for names of rules without an id.
  size_t appended = before.steering.size();
  delta_.rules.reserve(changeset_.rules.size());
  const auto& position = base_.steering_index->position;
  for (const auto& [id, rule] : changeset_.rules) {
    config::RuleDelta d;
    const uint32_t* at = config::find_value(position, id);
    if (at) d.before = &before.steering[*at];
    if (rule) {
      d.after = &*rule;
      d.after_index = at ? *at : appended++;
    }
    if (d.before && d.after && *d.before == *d.after) continue;
    if (d.before || d.after) delta_.rules.push_back(d);
  }
  changeset_.rules_added = appended - before.steering.size();
  // Configuration order, as config::validate() meets them (deletions last): of two rules of
  // the batch with one match, the later is the one refused.
  std::sort(delta_.rules.begin(), delta_.rules.end(),
            [](const config::RuleDelta& a, const config::RuleDelta& b) {
              const size_t ka = a.after ? a.after_index : SIZE_MAX,
                           kb = b.after ? b.after_index : SIZE_MAX;
              return ka != kb ? ka < kb
                              : (a.before ? a.before->id : 0) < (b.before ? b.before->id : 0);
            });
  for (const auto& [sid, local_sid] : changeset_.local_sids) {
    config::LocalSidDelta d;
    for (const config::LocalSid& ls : before.local_sids)
      if (ls.sid == sid) d.before = &ls;
    if (local_sid) d.after = &*local_sid;
    if (d.before && d.after && *d.before == *d.after) continue;
    if (d.before || d.after) delta_.local_sids.push_back(d);
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
    if (const RuleSlot* slot = config::find_value(rule_slot_, id)) {
      const v1::Change& c = changes_[slot->change];
      const char* kind = c.has_upsert_steering() ? "upsert_steering" : "delete_steering";
      return change_field(slot->change, kind, c.has_upsert_steering() ? rule_field(rest) : "") +
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
  } else if (split_keyed(e.path, "/srv6gw:gateway/rails/rail[name=", key, rest)) {
    if (auto it = rail_change_.find(key); it != rail_change_.end())
      return change_field(it->second, "upsert_rail", rail_field(rest)) + ": " + e.message + where;
  }
  return "configuration refused: " + e.message + where;
}

}  // namespace srv6gw::agent
