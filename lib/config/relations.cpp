// SPDX-License-Identifier: BSD-3-Clause
// What validate() and ConfigIndex share about the relations between objects: the match key
// of a steering rule (duplicates, QP-range scopes), the per-table rule counts against
// capacities, and the wording of every cross-object refusal (config/validate.hpp).
#include "config/validate.hpp"

#include <cstring>

namespace srv6gw::config {

ConfigError too_many_policies(std::string_view policy, size_t count, uint32_t capacity) {
  return {policy_path(policy), std::to_string(count) + " policies exceed capacities/policies (" +
                                   std::to_string(capacity) + ")"};
}

ConfigError too_many_local_sids(const net::Ipv6Addr& sid, size_t count, uint32_t capacity) {
  return {local_sid_path(sid), std::to_string(count) +
                                   " local SIDs exceed capacities/local-sids (" +
                                   std::to_string(capacity) + ")"};
}

ConfigError path_id_conflict(std::string_view policy, std::string_view segment_list,
                             uint16_t path_id, std::string_view owner_policy,
                             std::string_view owner_segment_list) {
  return {segment_list_path(policy, segment_list) + "/path-id",
          "path-id " + std::to_string(path_id) + " is already used by policy '" +
              std::string(owner_policy) + "' segment-list '" + std::string(owner_segment_list) +
              "' (path ids are unique across the gateway)"};
}

ConfigError local_sid_conflict(const net::Ipv6Addr& sid, std::string_view policy,
                               std::string_view segment_list) {
  return {local_sid_path(sid), "local SID " + net::to_string(sid) + " is also a SID of policy '" +
                                   std::string(policy) + "' segment-list '" +
                                   std::string(segment_list) +
                                   "': traffic to it would be both encapsulated and "
                                   "decapsulated here"};
}

ConfigError probe_needs_local_sid(std::string_view policy) {
  return {policy_path(policy) + "/probe-sid",
          "probe-sid needs a local SID with behavior end-probe on this gateway (where the "
          "replies come back)"};
}

std::optional<ConfigError> check_policy_rails(const GatewaySettings& cfg, const Policy& p) {
  if (p.rails.empty()) return std::nullopt;
  const std::string path = policy_path(p.name) + "/rails";
  std::string known;
  auto is_rail = [&cfg](std::string_view name) {
    if (cfg.rails.empty()) return name == kImplicitRailName;
    for (const Rail& r : cfg.rails)
      if (r.name == name) return true;
    return false;
  };
  for (size_t i = 0; i < p.rails.size(); ++i) {
    const std::string& name = p.rails[i];
    if (!is_rail(name)) {
      if (cfg.rails.empty()) {
        known = std::string("the single pair of ports is rail '") + kImplicitRailName + "'";
      } else {
        known = "rails:";
        for (const Rail& r : cfg.rails) known += " " + r.name;
      }
      return ConfigError{path, "unknown rail '" + name + "' (" + known + ")"};
    }
    for (size_t j = 0; j < i; ++j)
      if (p.rails[j] == name) return ConfigError{path, "rail '" + name + "' is named twice"};
  }
  return std::nullopt;
}

std::optional<ConfigError> check_probe_nexthop(const GatewaySettings& cfg, const Policy& p) {
  if (!p.probe_sid || cfg.fabric_nexthop_mac) return std::nullopt;
  const std::string msg =
      " (the gateway sends probes itself: there is no host frame to take the destination MAC "
      "from)";
  if (cfg.rails.empty())
    return ConfigError{policy_path(p.name) + "/probe-sid",
                       "probe-sid needs ports/fabric-nexthop-mac" + msg};
  // With rails, each rail that probes the policy may have its own next hop instead.
  for (const Rail& r : cfg.rails)
    if (policy_on_rail(p, r.name) && !r.fabric_nexthop_mac)
      return ConfigError{policy_path(p.name) + "/probe-sid",
                         "probe-sid needs ports/fabric-nexthop-mac or rail '" + r.name +
                             "' fabric-nexthop-mac (the rail probes this policy)" + msg};
  return std::nullopt;
}

ConfigError unknown_policy(const SteeringRule& r, size_t index) {
  return {rule_path(r, index) + "/policy", "unknown policy '" + r.policy + "'"};
}

ConfigError same_match(const SteeringRule& r, size_t index, const std::string& other_path) {
  return {rule_path(r, index), "same match as " + other_path};
}

ConfigError qp_range_overlap(const SteeringRule& r, size_t index, const std::string& other_path) {
  return {rule_path(r, index) + "/qp-range", "QP range " + std::to_string(r.qp_low) + ".." +
                                                 std::to_string(r.qp_high) + " overlaps " +
                                                 other_path};
}

SteeringMatch steering_match(const SteeringRule& r) {
  SteeringMatch m;
  m.kind = r.kind;
  m.dscp = r.dscp ? int16_t(*r.dscp) : int16_t(-1);
  switch (r.kind) {
    case SteeringKind::exact:
      m.family = r.dst.family;
      m.dst = r.dst.bytes;
      m.dest_qp = r.dest_qp;
      m.has_dst = true;
      break;
    case SteeringKind::dst_any_qp:
      m.family = r.dst.family;
      m.dst = r.dst.bytes;
      m.has_dst = true;
      break;
    case SteeringKind::qp_range:
      if (r.has_dst) {
        m.family = r.dst.family;
        m.dst = r.dst.bytes;
        m.has_dst = true;
      }
      m.qp_low = r.qp_low;
      m.qp_high = r.qp_high;
      break;
    case SteeringKind::prefix:
      m.family = r.dst.family;
      m.dst = r.dst.bytes;
      m.prefix_len = r.prefix_len;
      m.has_dst = true;
      break;
  }
  return m;
}

SteeringMatch qp_range_scope(const SteeringRule& r) {
  SteeringMatch m;
  m.kind = SteeringKind::qp_range;
  m.has_dst = r.has_dst;
  if (r.has_dst) {
    m.family = r.dst.family;
    m.dst = r.dst.bytes;
  }
  m.dscp = r.dscp ? int16_t(*r.dscp) : int16_t(-1);
  return m;
}

size_t SteeringMatchHash::operator()(const SteeringMatch& m) const {
  // A multiply-xorshift mix per 8-byte word of the fields (no padding bytes are read), then
  // a final avalanche: a few cycles per word where byte-wise FNV-1a took a multiply per
  // byte (this hash runs several times per rule of a 100k-rule batch).
  uint64_t h = 0x9E3779B97F4A7C15ull;
  auto mix = [&h](uint64_t v) {
    h = (h ^ v) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
  };
  mix(uint64_t(m.kind) | uint64_t(m.family) << 8 | uint64_t(m.has_dst) << 16 |
      uint64_t(m.prefix_len) << 24 | uint64_t(uint16_t(m.dscp)) << 32);
  uint64_t a = 0, b = 0;
  std::memcpy(&a, m.dst.data(), 8);
  std::memcpy(&b, m.dst.data() + 8, 8);
  mix(a);
  mix(b);
  mix(uint64_t(m.dest_qp) | uint64_t(m.qp_low) << 32);
  mix(m.qp_high);
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  return size_t(h);
}

void SteeringCounts::add(const SteeringRule& r, int delta) {
  switch (r.kind) {
    case SteeringKind::exact:
    case SteeringKind::dst_any_qp:
      exact += delta;
      break;
    case SteeringKind::qp_range:
      qp_ranges += delta;
      break;
    case SteeringKind::prefix:
      (r.dst.family == net::Family::ipv4 ? lpm4 : lpm6) += delta;
      break;
  }
}

std::optional<ConfigError> SteeringCounts::check(const Capacities& caps, const SteeringRule& r,
                                                 size_t index) const {
  // Built only on refusal: this runs for every rule of a batch or file.
  auto rp = [&] { return rule_path(r, index); };
  switch (r.kind) {
    case SteeringKind::exact:
    case SteeringKind::dst_any_qp:
      if (exact > int64_t(caps.exact_entries)) {
        return ConfigError{rp(), "exact and destination rules exceed capacities/exact-entries (" +
                                     std::to_string(caps.exact_entries) + ")"};
      }
      break;
    case SteeringKind::qp_range:
      if (qp_ranges > int64_t(caps.qp_ranges)) {
        return ConfigError{rp(), "QP range rules exceed capacities/qp-ranges (" +
                                     std::to_string(caps.qp_ranges) + ")"};
      }
      break;
    case SteeringKind::prefix:
      if (r.dst.family == net::Family::ipv4 && lpm4 > int64_t(caps.lpm4_rules)) {
        return ConfigError{rp(), "IPv4 prefix rules exceed capacities/lpm4-rules (" +
                                     std::to_string(caps.lpm4_rules) + ")"};
      }
      if (r.dst.family != net::Family::ipv4 && lpm6 > int64_t(caps.lpm6_rules)) {
        return ConfigError{rp(), "IPv6 prefix rules exceed capacities/lpm6-rules (" +
                                     std::to_string(caps.lpm6_rules) + ")"};
      }
      break;
  }
  return std::nullopt;
}

}  // namespace srv6gw::config
