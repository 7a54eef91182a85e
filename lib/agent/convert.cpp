// SPDX-License-Identifier: BSD-3-Clause
#include "agent/convert.hpp"

#include <charconv>
#include <tuple>
#include <vector>

#include "net/addr.hpp"

namespace srv6gw::agent {

namespace {

constexpr const char* kSteeringPath = "/srv6gw:gateway/steering/rule";
constexpr const char* kLocalSidsPath = "/srv6gw:gateway/local-sids/local-sid";

bool fail(FieldError& e, std::string field, std::string yang, std::string message) {
  e = FieldError{std::move(field), std::move(yang), std::move(message)};
  return false;
}

// Built by appending: GCC 12's -Wrestrict misfires on "literal" + std::string temporaries.
std::string quoted(std::string_view v) {
  std::string s;
  s.reserve(v.size() + 2);
  s += '\'';
  s += v;
  s += '\'';
  return s;
}

std::string subscript(int k) {
  std::string s = "[";
  s += std::to_string(k);
  s += ']';
  return s;
}

bool parse_uint(std::string_view text, unsigned& out) {
  if (text.empty()) return false;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && p == text.data() + text.size();
}

}  // namespace

bool from_proto(const v1::SrPolicy& in, config::Policy& out, FieldError& error) {
  const std::string pp = config::policy_path(in.name());
  out = config::Policy{};
  out.name = in.name();
  out.color = in.color();
  if (!in.endpoint().empty()) {
    auto ip = net::parse_ip(in.endpoint());
    if (!ip) {
      return fail(error, "endpoint", pp + "/endpoint",
                  quoted(in.endpoint()) + " is not an IPv4 or IPv6 address");
    }
    out.endpoint = *ip;
  }
  if (!in.source_address().empty()) {
    auto ip = net::parse_ipv6(in.source_address());
    if (!ip) {
      return fail(error, "source_address", pp + "/source-address",
                  quoted(in.source_address()) + " is not an IPv6 address");
    }
    out.source = *ip;
  }
  if (!in.probe_sid().empty()) {
    auto ip = net::parse_ipv6(in.probe_sid());
    if (!ip) {
      return fail(error, "probe_sid", pp + "/probe-sid",
                  quoted(in.probe_sid()) + " is not an IPv6 address");
    }
    out.probe_sid = *ip;
  }
  if (in.has_probe_dscp()) {
    if (in.probe_dscp() > 63) {
      return fail(error, "probe_dscp", pp + "/probe-dscp",
                  std::to_string(in.probe_dscp()) + " is not a DSCP (0..63)");
    }
    out.probe_dscp = uint8_t(in.probe_dscp());
  }
  // Names are checked against the rails by validation (the rails are in the configuration).
  out.rails.assign(in.rails().begin(), in.rails().end());
  switch (in.encap()) {
    case v1::ENCAP_MODE_UNSPECIFIED:
    case v1::ENCAP_MODE_ENCAPS:
      out.encap = srv6::EncapMode::encaps;
      break;
    case v1::ENCAP_MODE_ENCAPS_RED:
      out.encap = srv6::EncapMode::encaps_red;
      break;
    case v1::ENCAP_MODE_USID:
      out.encap = srv6::EncapMode::usid;
      break;
    default:
      return fail(error, "encap", pp + "/encap",
                  "unknown encap mode " + std::to_string(int(in.encap())));
  }
  if (in.has_usid_format()) {
    const auto& f = in.usid_format();
    if (f.block_bits() > 255) {
      return fail(
          error, "usid_format.block_bits", pp + "/usid-format/block-bits",
          "block-bits must be a multiple of 8 in 8..120, not " + std::to_string(f.block_bits()));
    }
    if (f.usid_bits() > 255) {
      return fail(
          error, "usid_format.usid_bits", pp + "/usid-format/usid-bits",
          "usid-bits must be a multiple of 8 in 8..120, not " + std::to_string(f.usid_bits()));
    }
    out.usid.block_bits = uint8_t(f.block_bits());
    out.usid.usid_bits = uint8_t(f.usid_bits());
  }
  const auto& sel = in.selection();
  switch (sel.mode()) {
    case v1::SELECTION_MODE_UNSPECIFIED:
    case v1::SELECTION_MODE_FLOW:
      out.selection = config::SelectionMode::flow;
      break;
    case v1::SELECTION_MODE_PACKET:
      out.selection = config::SelectionMode::packet;
      break;
    case v1::SELECTION_MODE_FLOWLET:
      out.selection = config::SelectionMode::flowlet;
      break;
    case v1::SELECTION_MODE_SELECTIVE:
      out.selection = config::SelectionMode::selective;
      break;
    case v1::SELECTION_MODE_ADAPTIVE:
      out.selection = config::SelectionMode::adaptive;
      break;
    case v1::SELECTION_MODE_BALANCED:
      out.selection = config::SelectionMode::balanced;
      break;
    default:
      return fail(error, "selection.mode", pp + "/selection/mode",
                  "unknown selection mode " + std::to_string(int(sel.mode())));
  }
  if (sel.has_flowlet_gap_us()) out.flowlet_gap_us = sel.flowlet_gap_us();
  if (sel.has_idle_gap_us()) out.idle_gap_us = sel.idle_gap_us();
  for (int i = 0; i < sel.spray_opcodes_size(); ++i) {
    const uint32_t op = sel.spray_opcodes(i);
    if (op > 255) {
      return fail(error, "selection.spray_opcodes[" + std::to_string(i) + "]",
                  pp + "/selection/spray-opcodes",
                  "spray opcode " + std::to_string(op) + " is not a BTH opcode (0..255)");
    }
    out.spray_opcodes.push_back(uint8_t(op));
  }
  for (int i = 0; i < in.segment_lists_size(); ++i) {
    const auto& sl_in = in.segment_lists(i);
    const std::string field = "segment_lists[" + std::to_string(i) + "]";
    const std::string sp = config::segment_list_path(in.name(), sl_in.name());
    config::SegmentList sl;
    sl.name = sl_in.name();
    if (sl_in.path_id() > 0xFFFF) {
      return fail(error, field + ".path_id", sp + "/path-id",
                  "path-id must be 0..65535 (it is the 16-bit SRH Tag), not " +
                      std::to_string(sl_in.path_id()));
    }
    sl.path_id = uint16_t(sl_in.path_id());
    if (sl_in.has_weight()) sl.weight = sl_in.weight();
    sl.backup = sl_in.backup();
    sl.load_group = sl_in.load_group();
    for (int j = 0; j < sl_in.sids_size(); ++j) {
      auto sid = net::parse_ipv6(sl_in.sids(j));
      if (!sid) {
        return fail(error, field + ".sids[" + std::to_string(j) + "]", sp + "/sid",
                    quoted(sl_in.sids(j)) + " is not an IPv6 address");
      }
      sl.sids.push_back(*sid);
    }
    out.segment_lists.push_back(std::move(sl));
  }
  return true;
}

bool from_proto(const v1::SteeringRule& in, config::SteeringRule& out, FieldError& error) {
  out = config::SteeringRule{};
  if (in.id() == 0) {
    return fail(error, "id", kSteeringPath,
                "a rule needs an id (1..4294967295): it is the rule's identity");
  }
  out.id = in.id();
  // Built only on refusal: this runs for every rule of a batch (100k at a time).
  auto rp = [&] { return config::rule_path(out, 0); };
  auto address = [&](const std::string& text, const char* field, const char* yang,
                     net::IpAddr& dst) {
    auto ip = net::parse_ip(text);
    if (!ip) {
      return fail(error, field, rp() + yang,
                  text.empty() ? std::string("a destination address is needed")
                               : quoted(text) + " is not an IPv4 or IPv6 address");
    }
    dst = *ip;
    return true;
  };
  switch (in.match_case()) {
    case v1::SteeringRule::kExact:
      out.kind = config::SteeringKind::exact;
      if (!address(in.exact().destination(), "exact.destination", "/exact/destination", out.dst))
        return false;
      out.dest_qp = in.exact().dest_qp();
      break;
    case v1::SteeringRule::kDestination:
      out.kind = config::SteeringKind::dst_any_qp;
      if (!address(in.destination(), "destination", "/destination", out.dst)) return false;
      break;
    case v1::SteeringRule::kQpRange:
      out.kind = config::SteeringKind::qp_range;
      out.qp_low = in.qp_range().qp_low();
      out.qp_high = in.qp_range().qp_high();
      if (!in.qp_range().destination().empty()) {
        if (!address(in.qp_range().destination(), "qp_range.destination", "/qp-range/destination",
                     out.dst))
          return false;
        out.has_dst = true;
      }
      break;
    case v1::SteeringRule::kPrefix: {
      out.kind = config::SteeringKind::prefix;
      const std::string& text = in.prefix();
      const auto slash = text.find('/');
      unsigned len = 0;
      auto ip = slash == std::string::npos ? std::nullopt : net::parse_ip(text.substr(0, slash));
      if (!ip || !parse_uint(std::string_view(text).substr(slash + 1), len) || len > 128) {
        return fail(error, "prefix", rp() + "/prefix",
                    quoted(text) + " is not a prefix (address/length, e.g. 10.1.0.0/16)");
      }
      out.dst = *ip;
      out.prefix_len = uint8_t(len);
      break;
    }
    default:
      return fail(error, "", rp(), "a rule needs a match: exact, destination, qp_range or prefix");
  }
  if (in.has_dscp()) {
    if (in.dscp() > 63) {
      return fail(error, "dscp", rp() + "/dscp",
                  "dscp must be 0..63, not " + std::to_string(in.dscp()));
    }
    out.dscp = uint8_t(in.dscp());
  }
  out.policy = in.policy();
  return true;
}

bool from_proto(const v1::LocalSid& in, config::LocalSid& out, FieldError& error) {
  out = config::LocalSid{};
  auto sid = net::parse_ipv6(in.sid());
  if (!sid) {
    return fail(error, "sid", kLocalSidsPath,
                in.sid().empty() ? std::string("a local SID needs an address")
                                 : quoted(in.sid()) + " is not an IPv6 address");
  }
  out.sid = *sid;
  switch (in.behavior()) {
    case v1::LOCAL_SID_BEHAVIOR_UNSPECIFIED:
    case v1::LOCAL_SID_BEHAVIOR_END_DT46:
      out.behavior = srv6::LocalSidBehavior::end_dt46;
      break;
    case v1::LOCAL_SID_BEHAVIOR_END_DX4:
      out.behavior = srv6::LocalSidBehavior::end_dx4;
      break;
    case v1::LOCAL_SID_BEHAVIOR_END_DX6:
      out.behavior = srv6::LocalSidBehavior::end_dx6;
      break;
    case v1::LOCAL_SID_BEHAVIOR_END_PROBE:
      out.behavior = srv6::LocalSidBehavior::end_probe;
      break;
    default:
      return fail(error, "behavior", config::local_sid_path(*sid) + "/behavior",
                  "unknown behavior " + std::to_string(int(in.behavior())));
  }
  return true;
}

bool from_proto(const v1::Rail& in, config::Rail& out, FieldError& error) {
  const std::string rp = config::rail_path(in.name());
  out = config::Rail{};
  if (in.name().empty())
    return fail(error, "name", "/srv6gw:gateway/rails/rail", "a rail needs a name");
  out.name = in.name();
  out.host_port.device = in.host();
  out.fabric_port.device = in.fabric();
  if (in.queues() > UINT16_MAX)
    return fail(error, "queues", rp + "/queues", std::to_string(in.queues()) + " queues");
  out.queues = uint16_t(in.queues());
  if (!in.source_address().empty()) {
    auto ip = net::parse_ipv6(in.source_address());
    if (!ip) {
      return fail(error, "source_address", rp + "/source-address",
                  quoted(in.source_address()) + " is not an IPv6 address");
    }
    out.source = *ip;
  }
  for (const auto& [text, field, leaf, dst] :
       {std::tuple{&in.fabric_nexthop_mac(), "fabric_nexthop_mac", "/fabric-nexthop-mac",
                   &out.fabric_nexthop_mac},
        std::tuple{&in.host_mac(), "host_mac", "/host-mac", &out.host_mac}}) {
    if (text->empty()) continue;
    auto mac = net::parse_mac(*text);
    if (!mac) return fail(error, field, rp + leaf, quoted(*text) + " is not a MAC address");
    *dst = *mac;
  }
  for (const auto& [mtu, field, leaf, dst] :
       {std::tuple{in.host_mtu(), "host_mtu", "/host-mtu", &out.host_port.mtu},
        std::tuple{in.fabric_mtu(), "fabric_mtu", "/fabric-mtu", &out.fabric_port.mtu}}) {
    if (mtu > UINT16_MAX)
      return fail(error, field, rp + leaf, std::to_string(mtu) + " is not a port MTU");
    *dst = uint16_t(mtu);
  }
  if (in.has_fabric_vlan()) {
    const v1::FabricVlan& v = in.fabric_vlan();
    config::FabricVlan& fv = out.fabric_port.vlan;
    fv.enabled = true;
    if (v.id() > UINT16_MAX)
      return fail(error, "fabric_vlan.id", rp + "/fabric-vlan/id",
                  std::to_string(v.id()) + " is not a VLAN id");
    fv.id = uint16_t(v.id());
    for (int k = 0; k < v.dscp_pcp_size(); ++k) {
      const v1::DscpPcp& e = v.dscp_pcp(k);
      if (e.dscp() > 63 || e.pcp() > 7) {
        return fail(error, "fabric_vlan.dscp_pcp" + subscript(k), rp + "/fabric-vlan/dscp-pcp",
                    "DSCP " + std::to_string(e.dscp()) + " -> PCP " + std::to_string(e.pcp()) +
                        ": DSCP is 0..63, PCP 0..7");
      }
      fv.dscp_pcp.push_back({uint8_t(e.dscp()), uint8_t(e.pcp())});
    }
    switch (v.host()) {
      case v1::HOST_VLAN_MODE_STRIP:
        fv.host = config::HostVlanMode::strip;
        break;
      case v1::HOST_VLAN_MODE_KEEP:
        fv.host = config::HostVlanMode::keep;
        break;
      default:
        return fail(error, "fabric_vlan.host", rp + "/fabric-vlan/host",
                    "unknown mode " + std::to_string(int(v.host())));
    }
  }
  for (int k = 0; k < in.local_sids_size(); ++k) {
    config::LocalSid ls;
    FieldError sid_error;
    if (!from_proto(in.local_sids(k), ls, sid_error)) {
      return fail(error, "local_sids" + subscript(k) + "." + sid_error.field,
                  rp + "/local-sids/local-sid", sid_error.message);
    }
    out.local_sids.push_back(ls);
  }
  return true;
}

void to_proto(const config::Policy& in, v1::SrPolicy& out) {
  out.Clear();
  out.set_name(in.name);
  out.set_color(in.color);
  if (in.endpoint) out.set_endpoint(net::to_string(*in.endpoint));
  if (in.source) out.set_source_address(net::to_string(*in.source));
  if (in.probe_sid) out.set_probe_sid(net::to_string(*in.probe_sid));
  if (in.probe_dscp) out.set_probe_dscp(*in.probe_dscp);
  for (const std::string& r : in.rails) out.add_rails(r);
  switch (in.encap) {
    case srv6::EncapMode::encaps:
      out.set_encap(v1::ENCAP_MODE_ENCAPS);
      break;
    case srv6::EncapMode::encaps_red:
      out.set_encap(v1::ENCAP_MODE_ENCAPS_RED);
      break;
    case srv6::EncapMode::usid:
      out.set_encap(v1::ENCAP_MODE_USID);
      break;
  }
  out.mutable_usid_format()->set_block_bits(in.usid.block_bits);
  out.mutable_usid_format()->set_usid_bits(in.usid.usid_bits);
  auto* sel = out.mutable_selection();
  switch (in.selection) {
    case config::SelectionMode::flow:
      sel->set_mode(v1::SELECTION_MODE_FLOW);
      break;
    case config::SelectionMode::packet:
      sel->set_mode(v1::SELECTION_MODE_PACKET);
      break;
    case config::SelectionMode::flowlet:
      sel->set_mode(v1::SELECTION_MODE_FLOWLET);
      break;
    case config::SelectionMode::selective:
      sel->set_mode(v1::SELECTION_MODE_SELECTIVE);
      break;
    case config::SelectionMode::adaptive:
      sel->set_mode(v1::SELECTION_MODE_ADAPTIVE);
      break;
    case config::SelectionMode::balanced:
      sel->set_mode(v1::SELECTION_MODE_BALANCED);
      break;
  }
  sel->set_flowlet_gap_us(in.flowlet_gap_us);
  sel->set_idle_gap_us(in.idle_gap_us);
  for (uint8_t op : in.spray_opcodes) sel->add_spray_opcodes(op);
  for (const auto& sl : in.segment_lists) {
    auto* o = out.add_segment_lists();
    o->set_name(sl.name);
    o->set_path_id(sl.path_id);
    o->set_weight(sl.weight);
    o->set_backup(sl.backup);
    o->set_load_group(sl.load_group);
    for (const auto& sid : sl.sids) o->add_sids(net::to_string(sid));
  }
}

std::string prefix_text(const config::SteeringRule& rule) {
  return net::to_string(rule.dst) + "/" + std::to_string(rule.prefix_len);
}

void to_proto(const config::SteeringRule& in, v1::SteeringRule& out) {
  out.Clear();
  out.set_id(in.id);
  switch (in.kind) {
    case config::SteeringKind::exact:
      out.mutable_exact()->set_destination(net::to_string(in.dst));
      out.mutable_exact()->set_dest_qp(in.dest_qp);
      break;
    case config::SteeringKind::dst_any_qp:
      out.set_destination(net::to_string(in.dst));
      break;
    case config::SteeringKind::qp_range:
      out.mutable_qp_range()->set_qp_low(in.qp_low);
      out.mutable_qp_range()->set_qp_high(in.qp_high);
      if (in.has_dst) out.mutable_qp_range()->set_destination(net::to_string(in.dst));
      break;
    case config::SteeringKind::prefix:
      out.set_prefix(prefix_text(in));
      break;
  }
  if (in.dscp) out.set_dscp(*in.dscp);
  out.set_policy(in.policy);
}

void to_proto(const config::LocalSid& in, v1::LocalSid& out) {
  out.Clear();
  out.set_sid(net::to_string(in.sid));
  switch (in.behavior) {
    case srv6::LocalSidBehavior::end_dx4:
      out.set_behavior(v1::LOCAL_SID_BEHAVIOR_END_DX4);
      break;
    case srv6::LocalSidBehavior::end_dx6:
      out.set_behavior(v1::LOCAL_SID_BEHAVIOR_END_DX6);
      break;
    case srv6::LocalSidBehavior::end_dt46:
      out.set_behavior(v1::LOCAL_SID_BEHAVIOR_END_DT46);
      break;
    case srv6::LocalSidBehavior::end_probe:
      out.set_behavior(v1::LOCAL_SID_BEHAVIOR_END_PROBE);
      break;
  }
}

void to_proto(const config::Rail& in, v1::Rail& out) {
  out.Clear();
  out.set_name(in.name);
  out.set_host(in.host_port.device);
  out.set_fabric(in.fabric_port.device);
  out.set_queues(in.queues);
  if (in.source) out.set_source_address(net::to_string(*in.source));
  if (in.fabric_nexthop_mac) out.set_fabric_nexthop_mac(net::to_string(*in.fabric_nexthop_mac));
  if (in.host_mac) out.set_host_mac(net::to_string(*in.host_mac));
  out.set_host_mtu(in.host_port.mtu);
  out.set_fabric_mtu(in.fabric_port.mtu);
  if (const config::FabricVlan& v = in.fabric_port.vlan; v.enabled) {
    v1::FabricVlan& fv = *out.mutable_fabric_vlan();
    fv.set_id(v.id);
    for (const config::DscpPcp& e : v.dscp_pcp) {
      v1::DscpPcp& d = *fv.add_dscp_pcp();
      d.set_dscp(e.dscp);
      d.set_pcp(e.pcp);
    }
    fv.set_host(v.host == config::HostVlanMode::keep ? v1::HOST_VLAN_MODE_KEEP
                                                     : v1::HOST_VLAN_MODE_STRIP);
  }
  for (const config::LocalSid& ls : in.local_sids) to_proto(ls, *out.add_local_sids());
}

namespace {

// One step of a YANG instance path: node name and the value of its predicate, if any
// ("segment-list[name='a']" -> {"segment-list", "a"}; "sid[.='x']" -> {"sid", "x"}).
struct Step {
  std::string name;
  std::string key;
  bool has_key = false;
};

std::vector<Step> split_steps(std::string_view path) {
  std::vector<Step> steps;
  size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '/') {
      ++i;
      continue;
    }
    Step s;
    while (i < path.size() && path[i] != '/' && path[i] != '[') s.name += path[i++];
    while (i < path.size() && path[i] == '[') {
      ++i;
      std::string pred;
      char quote = 0;
      while (i < path.size() && (quote || path[i] != ']')) {
        if (!quote && (path[i] == '\'' || path[i] == '"')) {
          quote = path[i];
        } else if (quote && path[i] == quote) {
          quote = 0;
        }
        pred += path[i++];
      }
      ++i;  // ']'
      const auto eq = pred.find('=');
      std::string value = eq == std::string::npos ? pred : pred.substr(eq + 1);
      if (value.size() >= 2 && (value.front() == '\'' || value.front() == '"')) {
        value = value.substr(1, value.size() - 2);
      }
      s.key = value;
      s.has_key = true;
    }
    steps.push_back(std::move(s));
  }
  return steps;
}

std::string snake(std::string_view yang_name) {
  std::string s(yang_name);
  for (char& c : s) {
    if (c == '-') c = '_';
  }
  return s;
}

template <class Match>
int find_index(int n, bool prefer_last, Match match) {
  int found = -1;
  for (int i = 0; i < n; ++i) {
    if (match(i)) {
      found = i;
      if (!prefer_last) break;
    }
  }
  return found;
}

bool same_address(const std::string& a, const std::string& b) {
  auto x = net::parse_ipv6(a), y = net::parse_ipv6(b);
  return x && y ? *x == *y : a == b;
}

std::string generic_field(const std::vector<Step>& steps) {
  std::string out;
  for (const auto& s : steps) {
    if (!out.empty()) out += '.';
    out += snake(s.name);
  }
  return out;
}

}  // namespace

std::string policy_field(const v1::SrPolicy& msg, std::string_view rest, bool prefer_last) {
  const auto steps = split_steps(rest);
  std::string out;
  const v1::SegmentList* list = nullptr;
  for (const auto& s : steps) {
    if (!out.empty()) out += '.';
    if (s.name == "segment-list") {
      out += "segment_lists";
      if (s.has_key) {
        const int k = find_index(msg.segment_lists_size(), prefer_last,
                                 [&](int i) { return msg.segment_lists(i).name() == s.key; });
        if (k >= 0) {
          out += subscript(k);
          list = &msg.segment_lists(k);
        }
      }
    } else if (s.name == "sid" && list) {
      out += "sids";
      if (s.has_key) {
        const int k = find_index(list->sids_size(), prefer_last,
                                 [&](int i) { return same_address(list->sids(i), s.key); });
        if (k >= 0) out += subscript(k);
      }
    } else if (s.name == "spray-opcodes" && s.has_key) {
      out += "spray_opcodes";
      unsigned op = 0;
      if (parse_uint(s.key, op)) {
        const auto& ops = msg.selection().spray_opcodes();
        const int k = find_index(ops.size(), prefer_last, [&](int i) { return ops[i] == op; });
        if (k >= 0) out += subscript(k);
      }
    } else {
      out += snake(s.name);
    }
  }
  return out;
}

std::string rule_field(std::string_view rest) {
  return generic_field(split_steps(rest));
}

std::string local_sid_field(std::string_view rest) {
  return generic_field(split_steps(rest));
}

std::string rail_field(std::string_view rest) {
  std::string out = generic_field(split_steps(rest));
  // The YANG container and list of a rail's SIDs are one repeated field in the message.
  constexpr std::string_view kSidList = "local_sids.local_sid";
  if (out.compare(0, kSidList.size(), kSidList) == 0) out.erase(10, kSidList.size() - 10);
  return out;
}

}  // namespace srv6gw::agent
