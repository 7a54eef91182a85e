// SPDX-License-Identifier: BSD-3-Clause
// The model's small pieces: enum names (from the lists in model.hpp), Policy equality and
// the YANG instance paths every refusal names nodes by. Validation: validate*.cpp.
#include "config/model.hpp"

#include <string_view>
#include <unordered_map>

namespace srv6gw::config {

const char* to_string(SelectionMode m) {
  return net::enum_name(kSelectionModeNames, m);
}
std::optional<SelectionMode> parse_selection_mode(std::string_view name) {
  return net::parse_enum<SelectionMode>(kSelectionModeNames, name);
}

const char* to_string(MissAction a) {
  return net::enum_name(kMissActionNames, a);
}
std::optional<MissAction> parse_miss_action(std::string_view name) {
  return net::parse_enum<MissAction>(kMissActionNames, name);
}

const char* to_string(HostVlanMode m) {
  return net::enum_name(kHostVlanModeNames, m);
}
std::optional<HostVlanMode> parse_host_vlan_mode(std::string_view name) {
  return net::parse_enum<HostVlanMode>(kHostVlanModeNames, name);
}

uint8_t pcp_for_dscp(const FabricVlan& v, uint8_t dscp) {
  for (const DscpPcp& e : v.dscp_pcp)
    if (e.dscp == dscp) return e.pcp;
  return uint8_t((dscp & 0x3F) >> 3);
}

const char* to_string(SteeringKind k) {
  return net::enum_name(kSteeringKindNames, k);
}
std::optional<SteeringKind> parse_steering_kind(std::string_view name) {
  return net::parse_enum<SteeringKind>(kSteeringKindNames, name);
}

const char* yang_name(srv6::EncapMode m) {
  return net::enum_name(kEncapModeNames, m);
}
std::optional<srv6::EncapMode> parse_encap_mode(std::string_view name) {
  return net::parse_enum(kEncapModeNames, name);
}

const char* yang_name(srv6::LocalSidBehavior b) {
  return net::enum_name(kLocalSidBehaviorNames, b);
}
std::optional<srv6::LocalSidBehavior> parse_local_sid_behavior(std::string_view name) {
  return net::parse_enum(kLocalSidBehaviorNames, name);
}

bool operator==(const Policy& a, const Policy& b) {
  return a.name == b.name && a.color == b.color && a.endpoint == b.endpoint &&
         a.source == b.source && a.encap == b.encap && a.usid.block_bits == b.usid.block_bits &&
         a.usid.usid_bits == b.usid.usid_bits && a.selection == b.selection &&
         a.flowlet_gap_us == b.flowlet_gap_us && a.idle_gap_us == b.idle_gap_us &&
         a.spray_opcodes == b.spray_opcodes && a.segment_lists == b.segment_lists &&
         a.probe_sid == b.probe_sid && a.probe_dscp == b.probe_dscp && a.rails == b.rails;
}

const char* to_string(ProbeClassSource s) {
  switch (s) {
    case ProbeClassSource::configured:
      return "configured";
    case ProbeClassSource::steering:
      return "steering";
    case ProbeClassSource::none:
      break;
  }
  return "none";
}

std::vector<ProbeClass> probe_classes(const GatewayConfig& cfg) {
  std::vector<ProbeClass> out(cfg.policies.size());
  // Per policy: -1 no rule with a DSCP match seen yet, 0..63 the one all such rules name,
  // -2 they disagree.
  std::vector<int> rule_dscp(cfg.policies.size(), -1);
  std::unordered_map<std::string_view, size_t> index;
  bool derive = false;
  for (size_t i = 0; i < cfg.policies.size(); ++i) {
    const Policy& p = cfg.policies[i];
    index.emplace(p.name, i);
    if (p.probe_dscp) {
      out[i] = {uint8_t(*p.probe_dscp << 2 | kProbeEcn), ProbeClassSource::configured};
    } else {
      derive |= bool(p.probe_sid);
    }
  }
  if (!derive) return out;  // a million rules are walked only when some probed policy needs it
  for (const SteeringRule& r : cfg.steering) {
    if (!r.dscp) continue;
    auto it = index.find(r.policy);
    if (it == index.end()) continue;
    int& d = rule_dscp[it->second];
    d = d == -1 || d == int(*r.dscp) ? int(*r.dscp) : -2;
  }
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i].source == ProbeClassSource::none && rule_dscp[i] >= 0)
      out[i] = {uint8_t(rule_dscp[i] << 2 | kProbeEcn), ProbeClassSource::steering};
  return out;
}

namespace {

// A key value inside a YANG predicate: single quotes unless the value holds one.
std::string quoted(std::string_view value) {
  const char q = value.find('\'') == std::string_view::npos ? '\'' : '"';
  std::string out;
  out.reserve(value.size() + 2);
  out += q;
  out += value;
  out += q;
  return out;
}

}  // namespace

std::string policy_path(std::string_view policy) {
  return std::string(kRootPath) + "/policies/policy[name=" + quoted(policy) + "]";
}

std::string segment_list_path(std::string_view policy, std::string_view segment_list) {
  return policy_path(policy) + "/segment-list[name=" + quoted(segment_list) + "]";
}

std::string rule_path(const SteeringRule& rule, size_t index) {
  if (rule.id != 0) {
    return std::string(kRootPath) + "/steering/rule[id='" + std::to_string(rule.id) + "']";
  }
  return std::string(kRootPath) + "/steering/rule[" + std::to_string(index + 1) + "]";
}

std::string local_sid_path(const net::Ipv6Addr& sid) {
  return std::string(kRootPath) + "/local-sids/local-sid[sid=" + quoted(net::to_string(sid)) + "]";
}

std::string rail_path(std::string_view rail) {
  return std::string(kRootPath) + "/rails/rail[name=" + quoted(rail) + "]";
}

std::string rail_local_sid_path(std::string_view rail, const net::Ipv6Addr& sid) {
  return rail_path(rail) + "/local-sids/local-sid[sid=" + quoted(net::to_string(sid)) + "]";
}

std::vector<Rail> effective_rails(const GatewaySettings& cfg) {
  if (!cfg.rails.empty()) return cfg.rails;
  // The name is move-assigned: assigning the literal trips gcc 12's -Wrestrict false positive
  // (GCC PR 105329) at -O3.
  std::vector<Rail> rails(1);
  Rail& r = rails.front();
  r.name = std::string(kImplicitRailName);
  r.host_port = cfg.host_port;
  r.fabric_port = cfg.fabric_port;
  r.queues = cfg.queues;
  return rails;  // source, MACs: the gateway-wide ones; local SIDs: the shared list
}

uint64_t policy_rail_mask(const Policy& p, const GatewaySettings& cfg) {
  if (p.rails.empty()) return kAllRails;
  uint64_t mask = 0;
  if (cfg.rails.empty()) {
    if (policy_on_rail(p, kImplicitRailName)) mask = 1;
    return mask;
  }
  for (size_t i = 0; i < cfg.rails.size() && i < kMaxRails; ++i)
    if (policy_on_rail(p, cfg.rails[i].name)) mask |= uint64_t(1) << i;
  return mask;
}

bool policy_on_rail(const Policy& p, std::string_view rail) {
  if (p.rails.empty()) return true;
  for (const std::string& r : p.rails)
    if (r == rail) return true;
  return false;
}

net::Ipv6Addr rail_source(const GatewaySettings& cfg, const Rail& rail) {
  return rail.source.value_or(cfg.source);
}

std::string sid_path(const std::string& segment_list_path, const net::Ipv6Addr& sid) {
  return segment_list_path + "/sid[.=" + quoted(net::to_string(sid)) + "]";
}

}  // namespace srv6gw::config
