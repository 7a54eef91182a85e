// SPDX-License-Identifier: BSD-3-Clause
// validate(): one valid configuration, then one mutation per rule, each expected to be
// refused at an exact YANG instance path with a message that says why.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "config/model.hpp"
#include "config/validate.hpp"

namespace srv6gw::config {
namespace {

net::Ipv6Addr v6(const char* s) {
  auto a = net::parse_ipv6(s);
  EXPECT_TRUE(a) << s;
  return a.value_or(net::Ipv6Addr{});
}

net::IpAddr ip(const char* s) {
  auto a = net::parse_ip(s);
  EXPECT_TRUE(a) << s;
  return a.value_or(net::IpAddr{});
}

SteeringRule exact(uint32_t id, const char* dst, uint32_t qp, const char* policy) {
  SteeringRule r;
  r.id = id;
  r.kind = SteeringKind::exact;
  r.dst = ip(dst);
  r.dest_qp = qp;
  r.policy = policy;
  return r;
}

SteeringRule any_qp(uint32_t id, const char* dst, const char* policy) {
  SteeringRule r;
  r.id = id;
  r.kind = SteeringKind::dst_any_qp;
  r.dst = ip(dst);
  r.policy = policy;
  return r;
}

SteeringRule qp_range(uint32_t id, uint32_t low, uint32_t high, const char* policy) {
  SteeringRule r;
  r.id = id;
  r.kind = SteeringKind::qp_range;
  r.qp_low = low;
  r.qp_high = high;
  r.policy = policy;
  return r;
}

SteeringRule prefix(uint32_t id, const char* dst, uint8_t len, const char* policy) {
  SteeringRule r;
  r.id = id;
  r.kind = SteeringKind::prefix;
  r.dst = ip(dst);
  r.prefix_len = len;
  r.policy = policy;
  return r;
}

// Two policies (H.Encaps with two lists, uSID F3216 with one), one rule of each kind,
// three local SIDs: every check below starts from here.
GatewayConfig base() {
  GatewayConfig c;
  c.host_port.device = "net_pcap0";
  c.fabric_port.device = "net_pcap1";
  c.source = v6("fc00:0:1::1");

  Policy p;
  p.name = "p1";
  p.segment_lists.push_back({"a", 1, 1, false, {v6("fc00:0:11::e"), v6("fc00:0:2::d4")}, ""});
  p.segment_lists.push_back({"b", 2, 1, false, {v6("fc00:0:12::e"), v6("fc00:0:2::d4")}, ""});
  c.policies.push_back(p);

  Policy u;
  u.name = "u1";
  u.encap = srv6::EncapMode::usid;
  u.segment_lists.push_back(
      {"x", 10, 1, false, {v6("fc00:0:11::"), v6("fc00:0:21::"), v6("fc00:0:2::")}, ""});
  c.policies.push_back(u);

  c.steering.push_back(exact(1, "10.0.1.1", 256, "p1"));
  c.steering.push_back(any_qp(2, "10.0.1.2", "p1"));
  c.steering.push_back(qp_range(3, 1000, 1999, "p1"));
  c.steering.push_back(prefix(4, "10.0.1.0", 24, "p1"));
  c.steering.push_back(prefix(5, "fd00:1::", 64, "u1"));

  c.local_sids.push_back({v6("fc00:0:1::d4"), srv6::LocalSidBehavior::end_dx4});
  c.local_sids.push_back({v6("fc00:0:1::d6"), srv6::LocalSidBehavior::end_dx6});
  c.local_sids.push_back({v6("fc00:0:1::100"), srv6::LocalSidBehavior::end_dt46});
  return c;
}

const std::string kPolicies = "/srv6gw:gateway/policies";
const std::string kP1 = kPolicies + "/policy[name='p1']";
const std::string kU1 = kPolicies + "/policy[name='u1']";
const std::string kP1a = kP1 + "/segment-list[name='a']";
const std::string kU1x = kU1 + "/segment-list[name='x']";
const std::string kRules = "/srv6gw:gateway/steering";
std::string rule(uint32_t id) {
  return kRules + "/rule[id='" + std::to_string(id) + "']";
}
const std::string kLocal = "/srv6gw:gateway/local-sids";

TEST(Validate, BaseConfigIsValid) {
  auto e = validate(base());
  EXPECT_FALSE(e) << e->path << ": " << e->message;
}

TEST(Validate, DefaultConstructedIsRefusedForItsMissingPorts) {
  auto e = validate(GatewayConfig{});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->path, "/srv6gw:gateway/ports/host");
}

struct Case {
  const char* name;
  std::function<void(GatewayConfig&)> mutate;
  std::string path;
  std::string message_part;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

class ValidateRefuses : public ::testing::TestWithParam<Case> {};

TEST_P(ValidateRefuses, NamesThePathAndTheReason) {
  const Case& c = GetParam();
  GatewayConfig cfg = base();
  c.mutate(cfg);
  auto e = validate(cfg);
  ASSERT_TRUE(e) << "accepted";
  EXPECT_EQ(e->path, c.path) << e->message;
  EXPECT_NE(e->message.find(c.message_part), std::string::npos)
      << "message: " << e->message << "\nexpected to contain: " << c.message_part;
}

SegmentList list_of(const char* name, uint16_t path_id, unsigned n_sids) {
  SegmentList sl{name, path_id, 1, false, {}, ""};
  for (unsigned i = 0; i < n_sids; ++i) {
    net::Ipv6Addr a = v6("fc00:0:100::e");
    a.bytes[5] = uint8_t(i + 1);  // fc00:0:1XX::e, distinct per hop
    sl.sids.push_back(a);
  }
  return sl;
}

// base() as two rails, r0 and r1 (the single pair's ports move into them).
void as_two_rails(GatewayConfig& c) {
  Rail r0, r1;
  r0.name = "r0";
  r0.host_port.device = c.host_port.device;
  r0.fabric_port.device = c.fabric_port.device;
  r1.name = "r1";
  r1.host_port.device = "net_pcap2";
  r1.fabric_port.device = "net_pcap3";
  c.host_port.device.clear();
  c.fabric_port.device.clear();
  c.rails = {r0, r1};
}
const std::string kRail1 = "/srv6gw:gateway/rails/rail[name='r1']";

const Case kCases[] = {
    // Ports and gateway-wide leaves.
    // engine/path-id-in-source: the low 16 source bits carry the path id (issue 22).
    {"path_id_in_source_gateway_source", [](auto& c) { c.engine.path_id_in_source = true; },
     "/srv6gw:gateway/source-address", "must end in 16 zero bits"},
    {"path_id_in_source_policy_source",
     [](auto& c) {
       c.source = v6("fc00:0:1::");
       c.engine.path_id_in_source = true;
       c.policies[1].source = v6("fc00:0:9::1");
     },
     kU1 + "/source-address", "must end in 16 zero bits"},
    // engine/source-entropy-bits N: flow entropy in source bits 16..16+N-1 (issue 18).
    {"source_entropy_bits_too_many", [](auto& c) { c.engine.source_entropy_bits = 17; },
     "/srv6gw:gateway/engine/source-entropy-bits", "0..16"},
    {"source_entropy_gateway_source",
     [](auto& c) {
       c.source = v6("fc00:0:1::80:0");  // bit 23: a /104 cannot hold 8 entropy bits
       c.engine.source_entropy_bits = 8;
     },
     "/srv6gw:gateway/source-address", "must end in 24 zero bits"},
    {"source_entropy_policy_source",
     [](auto& c) {
       c.source = v6("fc00:0:1::");
       c.engine.source_entropy_bits = 4;
       c.policies[1].source = v6("fc00:0:9::8:0");
     },
     kU1 + "/source-address", "a /108 or shorter"},
    {"probe_dscp_not_a_dscp", [](auto& c) { c.policies[0].probe_dscp = 64; }, kP1 + "/probe-dscp",
     "0..63"},
    {"host_empty", [](auto& c) { c.host_port.device.clear(); }, "/srv6gw:gateway/ports/host",
     "empty"},
    {"fabric_empty", [](auto& c) { c.fabric_port.device.clear(); }, "/srv6gw:gateway/ports/fabric",
     "empty"},
    {"fabric_same_as_host", [](auto& c) { c.fabric_port.device = "net_pcap0"; },
     "/srv6gw:gateway/ports/fabric", "differ"},
    {"queues_zero", [](auto& c) { c.queues = 0; }, "/srv6gw:gateway/ports/queues", "1..128"},
    {"queues_too_many", [](auto& c) { c.queues = 129; }, "/srv6gw:gateway/ports/queues", "not 129"},
    {"mbufs_zero", [](auto& c) { c.mbufs = 0; }, "/srv6gw:gateway/ports/mbufs", "at least 1"},
    {"vlan_id_zero",
     [](auto& c) {
       c.fabric_port.vlan.enabled = true;
       c.fabric_port.vlan.id = 0;
     },
     "/srv6gw:gateway/ports/fabric-vlan/id", "1..4094, not 0"},
    {"vlan_id_4095",
     [](auto& c) {
       c.fabric_port.vlan.enabled = true;
       c.fabric_port.vlan.id = 4095;
     },
     "/srv6gw:gateway/ports/fabric-vlan/id", "not 4095"},
    {"vlan_pcp_8",
     [](auto& c) {
       c.fabric_port.vlan = {true, 10, {{46, 8}}, config::HostVlanMode::strip};
     },
     "/srv6gw:gateway/ports/fabric-vlan/dscp-pcp[dscp='46']/pcp", "0..7, not 8"},
    {"vlan_dscp_64",
     [](auto& c) {
       c.fabric_port.vlan = {true, 10, {{64, 1}}, config::HostVlanMode::strip};
     },
     "/srv6gw:gateway/ports/fabric-vlan/dscp-pcp/dscp", "0..63, not 64"},
    {"vlan_dscp_twice",
     [](auto& c) {
       c.fabric_port.vlan = {true, 10, {{46, 5}, {46, 6}}, config::HostVlanMode::strip};
     },
     "/srv6gw:gateway/ports/fabric-vlan/dscp-pcp[dscp='46']", "mapped twice"},
    {"vlan_on_host_role",
     [](auto& c) {
       c.host_port.vlan.enabled = true;
       c.host_port.vlan.id = 5;
     },
     "/srv6gw:gateway/ports/fabric-vlan", "fabric side"},
    {"host_mtu_small", [](auto& c) { c.host_port.mtu = 576; }, "/srv6gw:gateway/ports/host-mtu",
     "1280..9600, not 576"},
    {"fabric_mtu_big", [](auto& c) { c.fabric_port.mtu = 9601; },
     "/srv6gw:gateway/ports/fabric-mtu", "not 9601"},
    // A rail's own MTUs and fabric VLAN (rails/rail), else the gateway-wide ones.
    {"rail_fabric_mtu_big",
     [](auto& c) {
       as_two_rails(c);
       c.rails[1].fabric_port.mtu = 9700;
     },
     kRail1 + "/fabric-mtu", "not 9700"},
    {"rail_unsets_host_mtu",
     [](auto& c) {
       as_two_rails(c);
       c.host_port.mtu = 9000;
       c.rails[0].host_port.mtu = 9000;
     },
     kRail1 + "/host-mtu", "ports/host-mtu is set"},
    {"rail_vlan_id_zero",
     [](auto& c) {
       as_two_rails(c);
       c.rails[1].fabric_port.vlan = {true, 0, {}, config::HostVlanMode::strip};
     },
     kRail1 + "/fabric-vlan/id", "not 0"},
    {"rail_vlan_pcp_8",
     [](auto& c) {
       as_two_rails(c);
       c.rails[1].fabric_port.vlan = {true, 7, {{46, 8}}, config::HostVlanMode::strip};
     },
     kRail1 + "/fabric-vlan/dscp-pcp[dscp='46']/pcp", "not 8"},
    {"rail_unsets_vlan",
     [](auto& c) {
       as_two_rails(c);
       c.fabric_port.vlan = {true, 10, {}, config::HostVlanMode::strip};
       c.rails[0].fabric_port.vlan = c.fabric_port.vlan;
     },
     kRail1 + "/fabric-vlan", "give fabric-vlan on those rails"},
    {"rail_vlan_on_host_role",
     [](auto& c) {
       as_two_rails(c);
       c.rails[1].host_port.vlan = {true, 7, {}, config::HostVlanMode::strip};
     },
     kRail1 + "/fabric-vlan", "fabric side"},
    {"pfc_priority_8",
     [](auto& c) {
       c.host_port.lossless.pfc_priorities = {3, 8};
     },
     "/srv6gw:gateway/ports/lossless/pfc-priorities", "priority 8 is not"},
    {"pfc_priority_twice",
     [](auto& c) {
       c.host_port.lossless.pfc_priorities = {3, 3};
     },
     "/srv6gw:gateway/ports/lossless/pfc-priorities", "given twice"},
    {"pfc_priorities_none", [](auto& c) { c.host_port.lossless.pfc_priorities.clear(); },
     "/srv6gw:gateway/ports/lossless/pfc-priorities", "1 to 8"},
    {"source_unspecified", [](auto& c) { c.source = {}; }, "/srv6gw:gateway/source-address",
     "unspecified"},
    {"source_multicast", [](auto& c) { c.source = v6("ff02::1"); },
     "/srv6gw:gateway/source-address", "multicast"},
    {"source_loopback", [](auto& c) { c.source = v6("::1"); }, "/srv6gw:gateway/source-address",
     "loopback"},
    {"hop_limit_zero", [](auto& c) { c.hop_limit = 0; }, "/srv6gw:gateway/hop-limit", "1..255"},
    {"max_sids_17", [](auto& c) { c.capacities.max_sids = 17; },
     "/srv6gw:gateway/capacities/max-sids", "1..16"},
    {"max_sids_0", [](auto& c) { c.capacities.max_sids = 0; },
     "/srv6gw:gateway/capacities/max-sids", "not 0"},
    {"lpm4_zero", [](auto& c) { c.capacities.lpm4_rules = 0; },
     "/srv6gw:gateway/capacities/lpm4-rules", "lpm4-rules must be"},
    {"policies_capacity_huge", [](auto& c) { c.capacities.policies = 70000; },
     "/srv6gw:gateway/capacities/policies", "1..65536"},

    // Policies.
    {"policy_name_empty", [](auto& c) { c.policies[0].name.clear(); },
     kPolicies + "/policy[name='']/name", "must not be empty"},
    {"policy_name_space", [](auto& c) { c.policies[0].name = "a b"; },
     kPolicies + "/policy[name='a b']/name", "letters, digits"},
    {"policy_name_quote", [](auto& c) { c.policies[0].name = "it's"; },
     kPolicies + "/policy[name=\"it's\"]/name", "letters, digits"},
    {"policy_name_too_long", [](auto& c) { c.policies[0].name = std::string(65, 'x'); },
     kPolicies + "/policy[name='" + std::string(65, 'x') + "']/name", "64"},
    {"policy_duplicate",
     [](auto& c) {
       c.policies.push_back(c.policies[0]);
       c.policies.back().segment_lists[0].path_id = 90;
       c.policies.back().segment_lists[1].path_id = 91;
     },
     kP1, "duplicate policy name"},
    {"policies_over_capacity", [](auto& c) { c.capacities.policies = 1; }, kU1,
     "exceed capacities/policies (1)"},
    {"endpoint_no_family", [](auto& c) { c.policies[0].endpoint = net::IpAddr{}; },
     kP1 + "/endpoint", "family"},
    {"policy_source_multicast", [](auto& c) { c.policies[0].source = v6("ff05::2"); },
     kP1 + "/source-address", "multicast"},
    {"encap_unknown", [](auto& c) { c.policies[0].encap = srv6::EncapMode(9); }, kP1 + "/encap",
     "unknown encap"},
    {"selection_unknown", [](auto& c) { c.policies[0].selection = SelectionMode(9); },
     kP1 + "/selection/mode", "unknown selection"},
    {"no_segment_lists", [](auto& c) { c.policies[0].segment_lists.clear(); },
     kP1 + "/segment-list", "at least one segment list"},
    {"too_many_segment_lists",
     [](auto& c) {
       auto& lists = c.policies[0].segment_lists;
       lists.clear();
       for (unsigned i = 0; i < 65; ++i) {
         std::string name = "l";  // (not "l" + ...: GCC 12 -Wrestrict false positive)
         name += std::to_string(i);
         lists.push_back(list_of(name.c_str(), uint16_t(100 + i), 1));
       }
     },
     kP1 + "/segment-list[name='l64']", "at most 64"},
    {"list_name_empty", [](auto& c) { c.policies[0].segment_lists[0].name.clear(); },
     kP1 + "/segment-list[name='']/name", "must not be empty"},
    {"list_duplicate_name", [](auto& c) { c.policies[0].segment_lists[1].name = "a"; }, kP1a,
     "duplicate segment list name 'a'"},
    {"path_id_duplicate_in_policy", [](auto& c) { c.policies[0].segment_lists[1].path_id = 1; },
     kP1 + "/segment-list[name='b']/path-id",
     "path-id 1 is already used by policy 'p1' "
     "segment-list 'a'"},
    {"path_id_reflected_bit", [](auto& c) { c.policies[0].segment_lists[1].path_id = 0x8000; },
     kP1 + "/segment-list[name='b']/path-id", "path-id must be 0..32767, not 32768"},
    {"path_id_duplicate_across_policies",
     [](auto& c) { c.policies[1].segment_lists[0].path_id = 2; }, kU1x + "/path-id",
     "already used by policy 'p1' segment-list 'b'"},
    {"all_weights_zero",
     [](auto& c) {
       for (auto& sl : c.policies[0].segment_lists) sl.weight = 0;
     },
     kP1, "non-backup segment list with weight > 0"},
    {"only_backups_carry_weight",
     [](auto& c) {
       c.policies[0].segment_lists[0].backup = true;
       c.policies[0].segment_lists[1].weight = 0;
     },
     kP1, "non-backup"},
    {"weight_too_big", [](auto& c) { c.policies[0].segment_lists[0].weight = 1000001; },
     kP1a + "/weight", "0..1000000"},
    {"selective_without_opcodes",
     [](auto& c) { c.policies[0].selection = SelectionMode::selective; }, kP1 + "/selection/mode",
     "selective mode needs"},
    {"duplicate_opcode",
     [](auto& c) {
       c.policies[0].selection = SelectionMode::selective;
       c.policies[0].spray_opcodes = {7, 8, 7};
     },
     kP1 + "/selection/spray-opcodes[.='7']", "duplicate spray opcode 7"},
    {"flowlet_gap_zero",
     [](auto& c) {
       c.policies[0].selection = SelectionMode::flowlet;
       c.policies[0].flowlet_gap_us = 0;
     },
     kP1 + "/selection/flowlet-gap-us", "1..10000000"},
    {"idle_gap_zero",
     [](auto& c) {
       c.policies[0].selection = SelectionMode::balanced;
       c.policies[0].idle_gap_us = 0;
     },
     kP1 + "/selection/idle-gap-us", "1..10000000"},
    {"bad_load_group", [](auto& c) { c.policies[0].segment_lists[0].load_group = "-spine"; },
     kP1a + "/load-group", "load-group"},
    {"no_sids", [](auto& c) { c.policies[0].segment_lists[0].sids.clear(); }, kP1a + "/sid",
     "at least one SID"},
    {"seventeen_sids", [](auto& c) { c.policies[0].segment_lists[0] = list_of("a", 1, 17); },
     kP1a + "/sid", "17 SIDs exceed the maximum of 16"},
    {"over_max_sids_capacity",
     [](auto& c) {
       c.capacities.max_sids = 2;
       c.policies[0].segment_lists[0] = list_of("a", 1, 3);
     },
     kP1a + "/sid", "capacities/max-sids"},
    {"sid_unspecified", [](auto& c) { c.policies[0].segment_lists[0].sids[1] = {}; },
     kP1a + "/sid[.='::']", "unspecified"},
    {"sid_multicast", [](auto& c) { c.policies[0].segment_lists[0].sids[0] = v6("ff0e::1"); },
     kP1a + "/sid[.='ff0e::1']", "multicast"},
    {"sid_twice",
     [](auto& c) {
       auto& sids = c.policies[0].segment_lists[0].sids;
       sids.push_back(sids[0]);
     },
     kP1a + "/sid[.='fc00:0:11::e']", "appears twice"},
    {"usid_block_not_byte_multiple", [](auto& c) { c.policies[1].usid.block_bits = 30; },
     kU1 + "/usid-format/block-bits", "multiple of 8"},
    {"usid_bits_zero", [](auto& c) { c.policies[1].usid.usid_bits = 0; },
     kU1 + "/usid-format/usid-bits", "multiple of 8"},
    {"usid_format_checked_in_every_mode", [](auto& c) { c.policies[0].usid.block_bits = 12; },
     kP1 + "/usid-format/block-bits", "multiple of 8"},
    {"usid_format_over_128",
     [](auto& c) {
       c.policies[1].usid.block_bits = 120;
       c.policies[1].usid.usid_bits = 16;
     },
     kU1 + "/usid-format/block-bits", "must not exceed 128"},
    {"usid_sid_outside_block",
     [](auto& c) { c.policies[1].segment_lists[0].sids[1] = v6("fc00:1:21::"); },
     kU1x + "/sid[.='fc00:1:21::']", "outside the 32-bit locator block"},
    {"usid_sid_trailing_bits",
     [](auto& c) { c.policies[1].segment_lists[0].sids[2] = v6("fc00:0:2:1::"); },
     kU1x + "/sid[.='fc00:0:2:1::']", "not a micro-SID"},
    {"usid_sid_zero_usid", [](auto& c) { c.policies[1].segment_lists[0].sids[2] = v6("fc00::"); },
     kU1x + "/sid[.='fc00::']", "all-zero micro-SID"},

    // Steering.
    {"rule_unknown_policy", [](auto& c) { c.steering[3].policy = "nope"; }, rule(4) + "/policy",
     "unknown policy 'nope'"},
    {"rule_no_policy", [](auto& c) { c.steering[0].policy.clear(); }, rule(1) + "/policy",
     "names no policy"},
    {"rule_without_id_uses_position",
     [](auto& c) {
       c.steering[2].id = 0;
       c.steering[2].policy = "nope";
     },
     kRules + "/rule[3]/policy", "unknown policy"},
    {"rule_id_duplicate", [](auto& c) { c.steering[4].id = 1; }, rule(1), "duplicate rule id 1"},
    {"exact_without_destination", [](auto& c) { c.steering[0].dst = {}; },
     rule(1) + "/exact/destination", "needs a destination"},
    {"exact_qp_over_24_bits", [](auto& c) { c.steering[0].dest_qp = 1u << 24; },
     rule(1) + "/exact/dest-qp", "24 bits"},
    {"any_qp_without_destination", [](auto& c) { c.steering[1].dst = {}; },
     rule(2) + "/destination", "needs a destination"},
    {"qp_range_reversed",
     [](auto& c) {
       c.steering[2].qp_low = 5;
       c.steering[2].qp_high = 4;
     },
     rule(3) + "/qp-range/qp-high", "not be lower than qp-low"},
    {"qp_range_over_24_bits", [](auto& c) { c.steering[2].qp_high = 0x1000000; },
     rule(3) + "/qp-range/qp-high", "24 bits"},
    {"qp_low_over_24_bits", [](auto& c) { c.steering[2].qp_low = 0x1000000; },
     rule(3) + "/qp-range/qp-low", "24 bits"},
    {"qp_range_destination_no_family", [](auto& c) { c.steering[2].has_dst = true; },
     rule(3) + "/qp-range/destination", "family"},
    {"qp_ranges_overlap_above",
     [](auto& c) { c.steering.push_back(qp_range(6, 1999, 2500, "u1")); }, rule(6) + "/qp-range",
     "overlaps " + rule(3)},
    {"qp_ranges_overlap_below", [](auto& c) { c.steering.push_back(qp_range(6, 10, 1000, "u1")); },
     rule(6) + "/qp-range", "overlaps " + rule(3)},
    {"qp_ranges_overlap_inside",
     [](auto& c) { c.steering.push_back(qp_range(6, 1500, 1600, "u1")); }, rule(6) + "/qp-range",
     "overlaps " + rule(3)},
    {"prefix_v4_too_long", [](auto& c) { c.steering[3].prefix_len = 33; }, rule(4) + "/prefix",
     "exceeds 32"},
    {"prefix_v6_too_long", [](auto& c) { c.steering[4].prefix_len = 129; }, rule(5) + "/prefix",
     "exceeds 128"},
    {"prefix_host_bits", [](auto& c) { c.steering[3].dst = ip("10.0.1.5"); }, rule(4) + "/prefix",
     "10.0.1.5/24 has bits set beyond its length"},
    {"prefix_no_family", [](auto& c) { c.steering[3].dst = {}; }, rule(4) + "/prefix", "family"},
    {"dscp_64", [](auto& c) { c.steering[0].dscp = 64; }, rule(1) + "/dscp", "0..63"},
    {"duplicate_match", [](auto& c) { c.steering.push_back(prefix(6, "10.0.1.0", 24, "u1")); },
     rule(6), "same match as " + rule(4)},
    {"duplicate_exact_match",
     [](auto& c) { c.steering.push_back(exact(6, "10.0.1.1", 256, "u1")); }, rule(6),
     "same match as " + rule(1)},
    {"exact_capacity", [](auto& c) { c.capacities.exact_entries = 1; }, rule(2),
     "exceed capacities/exact-entries (1)"},
    {"lpm4_capacity",
     [](auto& c) {
       c.capacities.lpm4_rules = 1;
       c.steering.push_back(prefix(6, "10.0.2.0", 24, "u1"));
     },
     rule(6), "capacities/lpm4-rules (1)"},
    {"lpm6_capacity",
     [](auto& c) {
       c.capacities.lpm6_rules = 1;
       c.steering.push_back(prefix(6, "fd00:2::", 64, "u1"));
     },
     rule(6), "capacities/lpm6-rules (1)"},
    {"qp_range_capacity",
     [](auto& c) {
       c.capacities.qp_ranges = 1;
       c.steering.push_back(qp_range(6, 3000, 3999, "u1"));
     },
     rule(6), "capacities/qp-ranges (1)"},

    // Local SIDs.
    {"local_sid_unspecified", [](auto& c) { c.local_sids[0].sid = {}; },
     kLocal + "/local-sid[sid='::']/sid", "unspecified"},
    {"local_sid_duplicate", [](auto& c) { c.local_sids[2].sid = c.local_sids[0].sid; },
     kLocal + "/local-sid[sid='fc00:0:1::d4']", "duplicate local SID"},
    {"local_sid_is_policy_sid", [](auto& c) { c.local_sids[1].sid = v6("fc00:0:2::d4"); },
     kLocal + "/local-sid[sid='fc00:0:2::d4']", "also a SID of policy 'p1' segment-list 'a'"},
    {"local_sid_behavior_unknown",
     [](auto& c) { c.local_sids[1].behavior = srv6::LocalSidBehavior(7); },
     kLocal + "/local-sid[sid='fc00:0:1::d6']/behavior", "unknown behavior"},
    {"local_sids_over_capacity", [](auto& c) { c.capacities.local_sids = 2; },
     kLocal + "/local-sid[sid='fc00:0:1::100']", "capacities/local-sids (2)"},

    // Path health probes (docs/design/probing.md).
    {"probe_interval", [](auto& c) { c.probe.interval_us = 50; },
     "/srv6gw:gateway/probe/interval-us", "100..10000000"},
    {"probe_loss_threshold", [](auto& c) { c.probe.loss_threshold = 0; },
     "/srv6gw:gateway/probe/loss-threshold", "1..1000"},
    {"probe_timeout_vs_interval",
     [](auto& c) {
       c.probe.interval_us = 100;
       c.probe.timeout_us = 200000;
     },
     "/srv6gw:gateway/probe/timeout-us", "in flight"},
    {"probe_sid_without_local_probe_sid",
     [](auto& c) {
       c.fabric_nexthop_mac = net::MacAddr{};
       c.policies[0].probe_sid = v6("fc00:0:2::f");
     },
     kP1 + "/probe-sid", "behavior end-probe"},
    {"probe_sid_without_nexthop_mac",
     [](auto& c) {
       c.local_sids.push_back({v6("fc00:0:1::f"), srv6::LocalSidBehavior::end_probe});
       c.policies[0].probe_sid = v6("fc00:0:2::f");
     },
     kP1 + "/probe-sid", "fabric-nexthop-mac"},
    {"probe_sid_multicast",
     [](auto& c) {
       c.local_sids.push_back({v6("fc00:0:1::f"), srv6::LocalSidBehavior::end_probe});
       c.fabric_nexthop_mac = net::MacAddr{};
       c.policies[0].probe_sid = v6("ff02::1");
     },
     kP1 + "/probe-sid", "probe-sid"},
    // A policy's rail scope (policy/rails, docs/design/rails.md).
    {"policy_rails_unknown",
     [](auto& c) {
       as_two_rails(c);
       c.policies[0].rails = {"r1", "r9"};
     },
     kP1 + "/rails", "unknown rail 'r9' (rails: r0 r1)"},
    {"policy_rails_twice",
     [](auto& c) {
       as_two_rails(c);
       c.policies[0].rails = {"r1", "r1"};
     },
     kP1 + "/rails", "rail 'r1' is named twice"},
    {"policy_rails_single_pair", [](auto& c) { c.policies[0].rails = {"r0"}; }, kP1 + "/rails",
     "unknown rail 'r0' (the single pair of ports is rail '0')"},
    // With rails, each rail probing a policy needs a next hop: its own or the gateway's.
    {"probe_sid_rail_without_nexthop_mac",
     [](auto& c) {
       as_two_rails(c);
       c.local_sids.push_back({v6("fc00:0:1::f"), srv6::LocalSidBehavior::end_probe});
       c.rails[0].fabric_nexthop_mac = net::MacAddr{};
       c.policies[0].probe_sid = v6("fc00:0:2::f");
     },
     kP1 + "/probe-sid", "rail 'r1' fabric-nexthop-mac"},
};

INSTANTIATE_TEST_SUITE_P(Rules, ValidateRefuses, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Validate, AcceptsPathIdInSourceWithRoomInEverySource) {
  GatewayConfig c = base();
  c.engine.path_id_in_source = true;
  c.source = v6("fc00:0:1::");
  c.policies[1].source = v6("fc00:0:9::");
  auto e = validate(c);
  EXPECT_FALSE(e) << e->path << ": " << e->message;
}

TEST(Validate, AcceptsSourceEntropyWithPathIdInEverySource) {
  GatewayConfig c = base();
  c.engine.path_id_in_source = true;
  c.engine.source_entropy_bits = 16;
  c.source = v6("fc00:0:1::");
  c.policies[1].source = v6("fc00:0:9:0:0:1::");  // a /96
  auto e = validate(c);
  EXPECT_FALSE(e) << e->path << ": " << e->message;
}

// The probes' traffic class: configured, else the steering rules' common DSCP match, else 0.
TEST(ProbeClasses, ConfiguredThenSteeringThenNone) {
  GatewayConfig c = base();
  ASSERT_GE(c.policies.size(), 2u);
  for (Policy& p : c.policies) p.probe_sid = v6("fc00:0:2::f");
  auto rule_to = [&](const std::string& policy, std::optional<uint8_t> dscp) {
    SteeringRule r;
    r.kind = SteeringKind::prefix;
    r.dst = ip("10.9.0.0");
    r.prefix_len = 16;
    r.dscp = dscp;
    r.policy = policy;
    c.steering.push_back(r);
  };
  c.steering.clear();
  rule_to(c.policies[0].name, 26);
  rule_to(c.policies[0].name, std::nullopt);  // no DSCP match: says nothing
  rule_to(c.policies[0].name, 26);
  std::vector<ProbeClass> k = probe_classes(c);
  EXPECT_EQ(k[0].traffic_class, 26 << 2 | kProbeEcn);
  EXPECT_EQ(k[0].source, ProbeClassSource::steering);
  EXPECT_EQ(k[1].traffic_class, 0);
  EXPECT_EQ(k[1].source, ProbeClassSource::none);
  rule_to(c.policies[0].name, 10);  // the rules disagree: no derived class
  EXPECT_EQ(probe_classes(c)[0].source, ProbeClassSource::none);
  c.policies[0].probe_dscp = 34;  // configured wins
  c.policies[1].probe_dscp = 0;
  k = probe_classes(c);
  EXPECT_EQ(k[0].traffic_class, 34 << 2 | kProbeEcn);
  EXPECT_EQ(k[0].source, ProbeClassSource::configured);
  EXPECT_EQ(k[1].traffic_class, kProbeEcn);
  EXPECT_STREQ(to_string(ProbeClassSource::steering), "steering");
}

TEST(Validate, AcceptsAProbedPolicy) {
  GatewayConfig c = base();
  c.local_sids.push_back({v6("fc00:0:1::f"), srv6::LocalSidBehavior::end_probe});
  c.fabric_nexthop_mac = net::MacAddr{};
  c.policies[0].probe_sid = v6("fc00:0:2::f");
  auto e = validate(c);
  EXPECT_FALSE(e) << e->path << ": " << e->message;
}

// A policy scoped to rails that exist; the implicit rail of a single pair is "0"; a probed
// policy needs no gateway-wide next hop when every rail probing it has its own.
TEST(Validate, AcceptsRailScopedPolicies) {
  GatewayConfig c = base();
  c.policies[0].rails = {"0"};
  auto e = validate(c);
  EXPECT_FALSE(e) << e->path << ": " << e->message;
  EXPECT_EQ(policy_rail_mask(c.policies[0], c), 1u);
  EXPECT_EQ(policy_rail_mask(c.policies[1], c), kAllRails);
  as_two_rails(c);
  c.policies[0].rails = {"r1"};
  c.policies[1].rails = {"r1", "r0"};
  c.local_sids.push_back({v6("fc00:0:1::f"), srv6::LocalSidBehavior::end_probe});
  c.rails[1].fabric_nexthop_mac = net::MacAddr{};
  c.policies[0].probe_sid = v6("fc00:0:2::f");  // probed by r1 only: r1's next hop serves
  e = validate(c);
  EXPECT_FALSE(e) << e->path << ": " << e->message;
  EXPECT_EQ(policy_rail_mask(c.policies[0], c), 2u);
  EXPECT_EQ(policy_rail_mask(c.policies[1], c), 3u);
  EXPECT_TRUE(policy_on_rail(c.policies[0], "r1"));
  EXPECT_FALSE(policy_on_rail(c.policies[0], "r0"));
}

// Things that look odd but are legitimate must stay accepted.
TEST(Validate, AcceptsEdgeCases) {
  {
    GatewayConfig c = base();
    c.steering.push_back(prefix(6, "10.0.1.0", 24, "u1"));
    c.steering.back().dscp = 26;                          // same prefix, DSCP-specific
    c.steering.push_back(qp_range(7, 2000, 2999, "u1"));  // adjacent to 1000..1999
    SteeringRule scoped = qp_range(8, 1000, 1999, "u1");  // same range, one destination
    scoped.has_dst = true;
    scoped.dst = ip("10.0.1.9");
    c.steering.push_back(scoped);
    c.steering.push_back(prefix(9, "0.0.0.0", 0, "p1"));  // IPv4 default route
    auto e = validate(c);
    EXPECT_FALSE(e) << e->path << ": " << e->message;
  }
  {
    GatewayConfig c = base();
    c.policies[0].encap = srv6::EncapMode::encaps_red;
    c.policies[0].segment_lists[0].sids.resize(1);  // Encaps.Red, one SID: no SRH
    c.policies[0].segment_lists[1].weight = 0;      // idle but configured
    c.policies[0].segment_lists[1].backup = true;
    auto e = validate(c);
    EXPECT_FALSE(e) << e->path << ": " << e->message;
  }
  {
    GatewayConfig c = base();
    c.policies[0].segment_lists[0] = list_of("a", 1, 16);  // the maximum
    auto e = validate(c);
    EXPECT_FALSE(e) << e->path << ": " << e->message;
  }
  {
    // 16 micro-SIDs in F3216: three containers.
    GatewayConfig c = base();
    auto& sids = c.policies[1].segment_lists[0].sids;
    sids.clear();
    for (unsigned i = 1; i <= 16; ++i) {
      net::Ipv6Addr a = v6("fc00::");
      a.bytes[5] = uint8_t(i);
      sids.push_back(a);
    }
    auto e = validate(c);
    EXPECT_FALSE(e) << e->path << ": " << e->message;
  }
}

TEST(Validate, FirstErrorInDocumentOrder) {
  GatewayConfig c = base();
  c.local_sids[0].sid = {};
  c.steering[0].policy = "nope";
  c.policies[1].segment_lists[0].path_id = 1;
  auto e = validate(c);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->path, kU1x + "/path-id");
}

TEST(ModelNames, EnumsRoundTripThroughYangNames) {
  for (auto m : {SelectionMode::flow, SelectionMode::packet, SelectionMode::flowlet,
                 SelectionMode::selective, SelectionMode::adaptive, SelectionMode::balanced}) {
    EXPECT_EQ(parse_selection_mode(to_string(m)), m);
  }
  for (auto a : {MissAction::pass, MissAction::drop}) EXPECT_EQ(parse_miss_action(to_string(a)), a);
  for (auto k : {SteeringKind::exact, SteeringKind::dst_any_qp, SteeringKind::qp_range,
                 SteeringKind::prefix}) {
    EXPECT_EQ(parse_steering_kind(to_string(k)), k);
  }
  EXPECT_STREQ(to_string(SteeringKind::dst_any_qp), "dst-any-qp");
  EXPECT_STREQ(to_string(SelectionMode::flowlet), "flowlet");
  EXPECT_FALSE(parse_selection_mode("Flow"));
  EXPECT_FALSE(parse_miss_action(""));
}

TEST(ModelPaths, QuoteKeysAsYangDoes) {
  EXPECT_EQ(segment_list_path("p1", "a"),
            "/srv6gw:gateway/policies/policy[name='p1']/segment-list[name='a']");
  EXPECT_EQ(local_sid_path(v6("fc00:0:1::d4")),
            "/srv6gw:gateway/local-sids/local-sid[sid='fc00:0:1::d4']");
  SteeringRule r;
  EXPECT_EQ(rule_path(r, 4), "/srv6gw:gateway/steering/rule[5]");
  r.id = 42;
  EXPECT_EQ(rule_path(r, 4), "/srv6gw:gateway/steering/rule[id='42']");
}

}  // namespace
}  // namespace srv6gw::config
