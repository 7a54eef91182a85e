// SPDX-License-Identifier: BSD-3-Clause
// Incremental validation (config_index.hpp): the indexes, their upkeep on commit, and the
// check of a batch against them. Refusals are worded by validate.hpp, as validate()'s are.
#include "config/config_index.hpp"

#include <algorithm>
#include <string>

namespace srv6gw::config {

namespace {

// Path of a running rule for messages: by id, or (rare: rules from the file without an id)
// by its position, found by a scan only on this refusal path.
std::string running_rule_path(const GatewayConfig& running, uint32_t id,
                              const SteeringMatch& match) {
  for (size_t i = 0; i < running.steering.size(); ++i) {
    const SteeringRule& r = running.steering[i];
    if (id != 0 ? r.id == id : steering_match(r) == match) return rule_path(r, i);
  }
  SteeringRule key;
  key.id = id;
  return rule_path(key, 0);
}

}  // namespace

ConfigIndex::ConfigIndex(const GatewayConfig& cfg) {
  policy_users_.reserve(cfg.policies.size());
  for (const Policy& p : cfg.policies) add_policy(p);
  for (const LocalSid& ls : cfg.local_sids) local_sids_.emplace(ls.sid, ls.behavior);
  matches_.reserve(cfg.steering.size());
  for (const SteeringRule& r : cfg.steering) add_rule(r);
}

void ConfigIndex::add_policy(const Policy& p) {
  policy_users_.emplace(p.name, 0);
  if (p.probe_sid) probed_policies_.insert(p.name);
  for (const SegmentList& sl : p.segment_lists) {
    path_owner_[sl.path_id] = Owner{p.name, sl.name};
    for (const auto& sid : sl.sids) policy_sids_[sid].push_back(Owner{p.name, sl.name});
  }
}

void ConfigIndex::remove_policy(const Policy& p) {
  probed_policies_.erase(p.name);
  for (const SegmentList& sl : p.segment_lists) {
    if (auto it = path_owner_.find(sl.path_id);
        it != path_owner_.end() && it->second.policy == p.name)
      path_owner_.erase(it);
    for (const auto& sid : sl.sids) {
      auto it = policy_sids_.find(sid);
      if (it == policy_sids_.end()) continue;
      auto& owners = it->second;
      owners.erase(std::remove_if(owners.begin(), owners.end(),
                                  [&](const Owner& o) { return o.policy == p.name; }),
                   owners.end());
      if (owners.empty()) policy_sids_.erase(it);
    }
  }
}

void ConfigIndex::add_rule(const SteeringRule& r) {
  matches_[steering_match(r)] = r.id;
  counts_.add(r, 1);
  ++policy_users_[r.policy];
  if (r.kind == SteeringKind::qp_range) ranges_[qp_range_scope(r)][r.qp_low] = {r.qp_high, r.id};
}

void ConfigIndex::remove_rule(const SteeringRule& r) {
  matches_.erase(steering_match(r));
  counts_.add(r, -1);
  if (auto it = policy_users_.find(r.policy); it != policy_users_.end()) --it->second;
  if (r.kind == SteeringKind::qp_range) {
    auto scope = ranges_.find(qp_range_scope(r));
    if (scope != ranges_.end()) {
      scope->second.erase(r.qp_low);
      if (scope->second.empty()) ranges_.erase(scope);
    }
  }
}

void ConfigIndex::commit(const ConfigDelta& delta) {
  // Removals first: an object may take over a key another one of the batch gave up.
  for (const PolicyDelta& d : delta.policies) {
    if (d.before) remove_policy(*d.before);
  }
  for (const RuleDelta& d : delta.rules) {
    if (d.before) remove_rule(*d.before);
  }
  for (const LocalSidDelta& d : delta.local_sids) {
    if (d.before) local_sids_.erase(d.before->sid);
  }
  for (const PolicyDelta& d : delta.policies) {
    if (d.before && !d.after) {
      policy_users_.erase(d.before->name);
    }
  }
  for (const PolicyDelta& d : delta.policies) {
    if (!d.after) continue;
    const int64_t users = policy_users_.count(d.after->name) ? policy_users_[d.after->name] : 0;
    add_policy(*d.after);
    policy_users_[d.after->name] = users;
  }
  size_t added = 0;
  for (const RuleDelta& d : delta.rules) added += d.after && !d.before;
  matches_.reserve(matches_.size() + added);  // one growth, not a doubling per power of two
  for (const RuleDelta& d : delta.rules) {
    if (d.after) add_rule(*d.after);
  }
  for (const LocalSidDelta& d : delta.local_sids) {
    if (d.after) local_sids_.emplace(d.after->sid, d.after->behavior);
  }
}

std::optional<IndexError> ConfigIndex::check(const GatewayConfig& running,
                                             const ConfigDelta& delta) const {
  auto fail = [](ConfigError e) { return IndexError{std::move(e), "", 0}; };
  const Capacities& caps = running.capacities;

  // ---------------- policies ----------------
  std::unordered_set<std::string_view> touched_policies;  // their running objects go away
  std::unordered_map<std::string_view, const Policy*> after_policies;
  int64_t policy_count = int64_t(policy_users_.size());
  for (const PolicyDelta& d : delta.policies) {
    if (d.before) {
      touched_policies.insert(d.before->name);
      --policy_count;
    }
    if (d.after) {
      touched_policies.insert(d.after->name);
      after_policies.emplace(d.after->name, d.after);
      ++policy_count;
      if (auto e = check_policy(running, *d.after)) return fail(*e);
    }
  }
  if (policy_count > int64_t(caps.policies)) {
    for (const PolicyDelta& d : delta.policies) {
      if (d.after && !d.before) {
        return fail(too_many_policies(d.after->name, size_t(policy_count), caps.policies));
      }
    }
  }
  auto policy_exists = [&](const std::string& name) {
    if (after_policies.count(name)) return true;
    return !touched_policies.count(name) && policy_users_.count(name);
  };
  // Path ids and SIDs of the batch's policies, against the untouched ones and each other.
  std::unordered_map<uint16_t, Owner> batch_paths;
  std::map<net::Ipv6Addr, Owner> batch_sids;
  for (const PolicyDelta& d : delta.policies) {
    if (!d.after) continue;
    const Policy& p = *d.after;
    for (const SegmentList& sl : p.segment_lists) {
      if (auto it = path_owner_.find(sl.path_id);
          it != path_owner_.end() && !touched_policies.count(it->second.policy)) {
        return fail(path_id_conflict(p.name, sl.name, sl.path_id, it->second.policy,
                                     it->second.segment_list));
      }
      if (auto [it, fresh] = batch_paths.emplace(sl.path_id, Owner{p.name, sl.name});
          !fresh && it->second.policy != p.name) {
        return fail(path_id_conflict(p.name, sl.name, sl.path_id, it->second.policy,
                                     it->second.segment_list));
      }
      for (const auto& sid : sl.sids) batch_sids.emplace(sid, Owner{p.name, sl.name});
    }
  }

  // ---------------- local SIDs ----------------
  std::map<net::Ipv6Addr, const LocalSid*> after_local;
  std::set<net::Ipv6Addr> removed_local;
  int64_t local_count = int64_t(local_sids_.size());
  // Each rail's local SIDs (rails/rail/local-sids) are read from `running`: the index holds
  // the shared list only, and a batch that changes a rail is validated whole instead.
  for (const Rail& r : running.rails) local_count += int64_t(r.local_sids.size());
  for (const LocalSidDelta& d : delta.local_sids) {
    if (d.before) {
      removed_local.insert(d.before->sid);
      --local_count;
    }
    if (d.after) {
      after_local.emplace(d.after->sid, d.after);
      ++local_count;
      if (auto e = check_local_sid(*d.after)) return fail(*e);
    }
  }
  if (local_count > int64_t(caps.local_sids)) {
    for (const LocalSidDelta& d : delta.local_sids) {
      if (d.after && !d.before) {
        return fail(too_many_local_sids(d.after->sid, size_t(local_count), caps.local_sids));
      }
    }
  }
  // A SID of a policy must not be a local SID: the batch's local SIDs against every policy
  // in force afterwards, and the batch's policy SIDs against the untouched local SIDs.
  for (const auto& [sid, ls] : after_local) {
    if (auto it = batch_sids.find(sid); it != batch_sids.end()) {
      return fail(local_sid_conflict(sid, it->second.policy, it->second.segment_list));
    }
    if (auto it = policy_sids_.find(sid); it != policy_sids_.end()) {
      for (const Owner& o : it->second) {
        if (!touched_policies.count(o.policy)) {
          return fail(local_sid_conflict(sid, o.policy, o.segment_list));
        }
      }
    }
  }
  for (const auto& [sid, owner] : batch_sids) {
    if (local_sids_.count(sid) && !removed_local.count(sid) && !after_local.count(sid)) {
      return fail(local_sid_conflict(sid, owner.policy, owner.segment_list));
    }
  }
  // The rails' SIDs: unique across every list, and none a SID of a policy (as validate()).
  bool rail_probe_sid = false;
  for (const Rail& r : running.rails)
    for (const LocalSid& ls : r.local_sids) {
      rail_probe_sid |= ls.behavior == srv6::LocalSidBehavior::end_probe;
      const std::string path = rail_local_sid_path(r.name, ls.sid);
      if (after_local.count(ls.sid))
        return fail(ConfigError{path, "duplicate local SID " + net::to_string(ls.sid)});
      if (auto it = batch_sids.find(ls.sid); it != batch_sids.end()) {
        ConfigError e = local_sid_conflict(ls.sid, it->second.policy, it->second.segment_list);
        e.path = path;
        return fail(e);
      }
    }

  // A probed policy needs a local end-probe SID (where its replies come back), as
  // validate() requires of the whole result.
  bool probe_sid_after = rail_probe_sid;
  for (const auto& [sid, behavior] : local_sids_) {
    probe_sid_after |= behavior == srv6::LocalSidBehavior::end_probe && !removed_local.count(sid) &&
                       !after_local.count(sid);
  }
  for (const auto& [sid, ls] : after_local)
    probe_sid_after |= ls->behavior == srv6::LocalSidBehavior::end_probe;
  if (!probe_sid_after) {
    const std::string* needs = nullptr;
    for (const PolicyDelta& d : delta.policies)
      if (!needs && d.after && d.after->probe_sid) needs = &d.after->name;
    for (const std::string& name : probed_policies_)
      if (!needs && !touched_policies.count(name)) needs = &name;
    if (needs) return fail(probe_needs_local_sid(*needs));
  }

  // ---------------- steering ----------------
  // Ids whose running rule goes away: a sorted vector (one allocation, binary searched)
  // rather than a node per id, which cost more than the rest of a 100k-rule check.
  std::vector<uint32_t> touched_ids;
  touched_ids.reserve(delta.rules.size());
  auto touched = [&touched_ids](uint32_t id) {
    return std::binary_search(touched_ids.begin(), touched_ids.end(), id);
  };
  std::unordered_map<std::string_view, int64_t> users_delta;
  SteeringCounts counts = counts_;
  for (const RuleDelta& d : delta.rules) {
    if (d.before) {
      touched_ids.push_back(d.before->id);
      counts.add(*d.before, -1);
      --users_delta[d.before->policy];
    }
    // An id new to the batch (no `before`) names no running rule, and `touched` is asked
    // only about running rules: not pushed (a 100k-rule addition sorts nothing).
    if (d.after) ++users_delta[d.after->policy];
  }
  std::sort(touched_ids.begin(), touched_ids.end());
  // A policy deleted by the batch must not be left with users.
  for (const PolicyDelta& d : delta.policies) {
    if (!d.before || d.after) continue;
    const std::string& name = d.before->name;
    int64_t users = 0;
    if (auto it = policy_users_.find(name); it != policy_users_.end()) users = it->second;
    if (auto it = users_delta.find(name); it != users_delta.end()) users += it->second;
    if (users <= 0) continue;
    IndexError e;
    e.policy_in_use = name;
    // Name one user: a rule of the batch, else a running rule the batch left alone.
    for (const RuleDelta& rd : delta.rules) {
      if (rd.after && rd.after->policy == name) {
        e.user_rule_id = rd.after->id;
        e.error = ConfigError{rule_path(*rd.after, rd.after_index) + "/policy", ""};
        return e;
      }
    }
    for (size_t i = 0; i < running.steering.size(); ++i) {
      const SteeringRule& r = running.steering[i];
      if (r.policy == name && !touched(r.id)) {
        e.user_rule_id = r.id;
        e.error = ConfigError{rule_path(r, i) + "/policy", ""};
        return e;
      }
    }
    return e;
  }
  IndexMap<SteeringMatch, const RuleDelta*, SteeringMatchHash> batch_matches;
  batch_matches.reserve(delta.rules.size());
  // qp-range rules of the batch by scope, then qp_low.
  std::map<SteeringMatch, std::map<uint32_t, const RuleDelta*>> batch_ranges;
  std::string_view last_policy;
  bool last_policy_exists = false;
  bool have_last_policy = false;
  for (const RuleDelta& d : delta.rules) {
    if (!d.after) continue;
    const SteeringRule& r = *d.after;
    if (auto e = check_rule(r, d.after_index)) return fail(*e);
    // Added in configuration order: the rule that fills a table past its capacity is named.
    counts.add(r, 1);
    if (auto e = counts.check(caps, r, d.after_index)) return fail(*e);
    // Most rules of a big batch name the policy of the rule before: looked up once per run.
    if (!have_last_policy || r.policy != last_policy) {
      have_last_policy = true;
      last_policy = r.policy;
      last_policy_exists = policy_exists(r.policy);
    }
    if (!last_policy_exists) {
      return fail(unknown_policy(r, d.after_index));
    }
    const SteeringMatch m = steering_match(r);
    if (const uint32_t* id = find_value(matches_, m); id && !touched(*id)) {
      return fail(same_match(r, d.after_index, running_rule_path(running, *id, m)));
    }
    if (auto [other, fresh] = batch_matches.try_emplace(m, &d); !fresh) {
      return fail(same_match(r, d.after_index,
                             rule_path(*other->second->after, other->second->after_index)));
    }
    if (r.kind == SteeringKind::qp_range) batch_ranges[qp_range_scope(r)].emplace(r.qp_low, &d);
  }
  // QP ranges of one scope must not overlap: the batch's against each other (neighbours
  // by qp_low) and against the running ones that stay (neighbours, skipping replaced ones).
  for (const auto& [scope, by_low] : batch_ranges) {
    auto overlap = [&](const RuleDelta& d, const std::string& other) {
      return fail(qp_range_overlap(*d.after, d.after_index, other));
    };
    const RuleDelta* prev = nullptr;
    for (const auto& [low, d] : by_low) {
      if (prev && prev->after->qp_high >= low)
        return overlap(*d, rule_path(*prev->after, prev->after_index));
      prev = d;
    }
    auto running_scope = ranges_.find(scope);
    if (running_scope == ranges_.end()) continue;
    const auto& running_by_low = running_scope->second;
    for (const auto& [low, d] : by_low) {
      const uint32_t high = d->after->qp_high;
      // The running ranges that stay and could overlap [low, high]: the last one starting
      // at or before `low`, and every one starting within (low, high].
      auto it = running_by_low.upper_bound(low);
      if (it != running_by_low.begin()) {
        auto before = std::prev(it);
        while (true) {
          if (!touched(before->second.second)) {
            if (before->second.first >= low) {
              SteeringRule key;
              key.id = before->second.second;
              return overlap(*d, running_rule_path(running, key.id, {}));
            }
            break;
          }
          if (before == running_by_low.begin()) break;
          --before;
        }
      }
      for (; it != running_by_low.end() && it->first <= high; ++it) {
        if (!touched(it->second.second))
          return overlap(*d, running_rule_path(running, it->second.second, {}));
      }
    }
  }
  return std::nullopt;
}

}  // namespace srv6gw::config
