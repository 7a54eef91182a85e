// SPDX-License-Identifier: BSD-3-Clause
// The libyang loader: every shipped example loads and round-trips through to_json; libyang
// errors come back with the offending node's path; every invalid example under invalid/
// is refused with the path its .expect sidecar names.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "config/json_output.hpp"
#include "config/loader.hpp"
#include "config/validate.hpp"

#ifndef SRV6GW_SOURCE_ROOT
#error "SRV6GW_SOURCE_ROOT must name the source tree"
#endif

namespace srv6gw::config {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = SRV6GW_SOURCE_ROOT;

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<fs::path> json_files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".json") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

const GatewayConfig& ok(const LoadResult& r) {
  if (auto* e = std::get_if<ConfigError>(&r)) {
    ADD_FAILURE() << "refused: " << e->path << ": " << e->message;
    static const GatewayConfig empty;
    return empty;
  }
  return std::get<GatewayConfig>(r);
}

ConfigError refused(const LoadResult& r) {
  if (auto* e = std::get_if<ConfigError>(&r)) return *e;
  ADD_FAILURE() << "accepted";
  return {};
}

net::Ipv6Addr v6(const char* s) {
  return net::parse_ipv6(s).value();
}
net::IpAddr ip(const char* s) {
  return net::parse_ip(s).value();
}

const Policy* find_policy(const GatewayConfig& c, const std::string& name) {
  for (const auto& p : c.policies) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

TEST(Loader, FindsTheYangModule) {
  const std::string dir = find_yang_dir();
  ASSERT_FALSE(dir.empty());
  EXPECT_TRUE(fs::exists(fs::path(dir) / "srv6gw.yang"));
}

// The name lists of model.hpp are the module's enums: every name is an `enum` of
// srv6gw.yang, and parses back to its member.
TEST(Loader, EnumNameListsMatchTheYangModule) {
  std::ifstream in(kRoot / "config" / "yang" / "srv6gw.yang");
  ASSERT_TRUE(in);
  const std::string module((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto in_module = [&](const std::string& name) {
    return module.find("enum " + name + " {") != std::string::npos;
  };
  for (size_t i = 0; i < kSelectionModeNames.size(); ++i) {
    EXPECT_TRUE(in_module(kSelectionModeNames[i])) << kSelectionModeNames[i];
    EXPECT_EQ(parse_selection_mode(to_string(SelectionMode(i))), SelectionMode(i));
  }
  for (size_t i = 0; i < kMissActionNames.size(); ++i) {
    EXPECT_TRUE(in_module(kMissActionNames[i])) << kMissActionNames[i];
    EXPECT_EQ(parse_miss_action(to_string(MissAction(i))), MissAction(i));
  }
  for (const auto& [member, name] : kEncapModeNames) {
    EXPECT_TRUE(in_module(name)) << name;
    EXPECT_EQ(parse_encap_mode(yang_name(member)), member);
  }
  for (const auto& [member, name] : kLocalSidBehaviorNames) {
    EXPECT_TRUE(in_module(name)) << name;
    EXPECT_EQ(parse_local_sid_behavior(yang_name(member)), member);
  }
  for (size_t i = 0; i < kHostVlanModeNames.size(); ++i) {
    EXPECT_TRUE(in_module(kHostVlanModeNames[i])) << kHostVlanModeNames[i];
    EXPECT_EQ(parse_host_vlan_mode(to_string(HostVlanMode(i))), HostVlanMode(i));
  }
  EXPECT_EQ(parse_encap_mode("encaps_red"), std::nullopt);  // srv6::to_string's name, not YANG's
  EXPECT_EQ(parse_selection_mode("Flow"), std::nullopt);
}

TEST(Loader, EveryExampleLoadsAndRoundTrips) {
  const auto files = json_files(kRoot / "config/examples");
  ASSERT_GE(files.size(), 2u);
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    auto r = load_config_file(f.string());
    const GatewayConfig& cfg = ok(r);
    EXPECT_FALSE(cfg.policies.empty());
    const std::string json = to_json(cfg);
    auto again = load_config_json(json);
    EXPECT_EQ(ok(again), cfg) << json;
    // Stable: printing the reloaded configuration gives the same text.
    EXPECT_EQ(to_json(ok(again)), json);
  }
}

TEST(Loader, DemoConfigMapsEveryField) {
  auto r = load_config_file((kRoot / "config/examples/demo.json").string());
  const GatewayConfig& c = ok(r);
  EXPECT_EQ(c.host_port.device, "net_pcap0");
  EXPECT_EQ(c.fabric_port.device, "net_pcap1");
  EXPECT_EQ(c.source, v6("fc00:0:1::1"));
  ASSERT_TRUE(c.fabric_nexthop_mac);
  EXPECT_EQ(*c.fabric_nexthop_mac, net::parse_mac("02:00:00:00:0f:01").value());
  ASSERT_EQ(c.policies.size(), 3u);

  const Policy* v4 = find_policy(c, "rack1-v4");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->encap, srv6::EncapMode::encaps);
  EXPECT_EQ(v4->endpoint, ip("fc00:0:2::1"));
  ASSERT_EQ(v4->segment_lists.size(), 2u);
  EXPECT_EQ(v4->segment_lists[0].sids,
            (std::vector{v6("fc00:0:11::e"), v6("fc00:0:21::e"), v6("fc00:0:2::d4")}));

  const Policy* v6p = find_policy(c, "rack1-v6");
  ASSERT_TRUE(v6p);
  EXPECT_EQ(v6p->encap, srv6::EncapMode::usid);
  EXPECT_EQ(v6p->usid.block_bits, 32);
  EXPECT_EQ(v6p->usid.usid_bits, 16);

  const Policy* pinned = find_policy(c, "pinned-qp");
  ASSERT_TRUE(pinned);
  EXPECT_EQ(pinned->encap, srv6::EncapMode::encaps_red);
  EXPECT_EQ(pinned->selection, SelectionMode::packet);
  EXPECT_EQ(pinned->endpoint, ip("10.0.1.1"));
  ASSERT_EQ(pinned->segment_lists.size(), 2u);
  EXPECT_EQ(pinned->segment_lists[0].weight, 3u);
  EXPECT_EQ(pinned->segment_lists[1].weight, 1u);
  EXPECT_EQ(pinned->segment_lists[0].sids.size(), 6u);
  EXPECT_EQ(pinned->segment_lists[1].path_id, 302);

  ASSERT_EQ(c.steering.size(), 3u);
  EXPECT_EQ(c.steering[0].kind, SteeringKind::exact);
  EXPECT_EQ(c.steering[0].dst, ip("10.0.1.1"));
  EXPECT_EQ(c.steering[0].dest_qp, 256u);
  EXPECT_EQ(c.steering[0].policy, "pinned-qp");
  EXPECT_EQ(c.steering[1].kind, SteeringKind::prefix);
  EXPECT_EQ(c.steering[1].dst, ip("10.0.1.0"));
  EXPECT_EQ(c.steering[1].prefix_len, 24);
  EXPECT_EQ(c.steering[2].dst, ip("fd00:1::"));
  EXPECT_EQ(c.steering[2].prefix_len, 64);
  EXPECT_EQ(c.steering[2].id, 30u);

  ASSERT_EQ(c.local_sids.size(), 3u);
  EXPECT_EQ(c.local_sids[0].sid, v6("fc00:0:1::d4"));
  EXPECT_EQ(c.local_sids[0].behavior, srv6::LocalSidBehavior::end_dx4);
  EXPECT_EQ(c.local_sids[1].behavior, srv6::LocalSidBehavior::end_dx6);
  EXPECT_EQ(c.local_sids[2].sid, v6("fc00:0:1::100"));
  EXPECT_EQ(c.local_sids[2].behavior, srv6::LocalSidBehavior::end_dt46);
}

TEST(Loader, GatewayExampleMapsRuleKindsAndOptions) {
  auto r = load_config_file((kRoot / "config/examples/gateway.json").string());
  const GatewayConfig& c = ok(r);
  EXPECT_EQ(c.queues, 4);
  EXPECT_EQ(c.fabric_non_sid, MissAction::drop);
  EXPECT_EQ(c.capacities.exact_entries, 262144u);
  const Policy* sel = find_policy(c, "pod2-collective");
  ASSERT_TRUE(sel);
  EXPECT_EQ(sel->selection, SelectionMode::selective);
  EXPECT_EQ(sel->spray_opcodes, (std::vector<uint8_t>{7, 8}));
  EXPECT_TRUE(sel->segment_lists.back().backup);
  const Policy* us = find_policy(c, "pod3-usid");
  ASSERT_TRUE(us);
  EXPECT_EQ(us->selection, SelectionMode::flowlet);
  EXPECT_EQ(us->flowlet_gap_us, 100u);
  EXPECT_EQ(us->source, v6("fc00:0:1::2"));
  unsigned kinds[4] = {};
  for (const auto& rule : c.steering) kinds[unsigned(rule.kind)]++;
  for (unsigned k : kinds) EXPECT_GE(k, 2u);
  const auto& scoped = c.steering[5];
  EXPECT_EQ(scoped.kind, SteeringKind::qp_range);
  EXPECT_TRUE(scoped.has_dst);
  EXPECT_EQ(scoped.dst, ip("fd00:3::13"));
  EXPECT_EQ(scoped.qp_low, 12288u);
  EXPECT_EQ(scoped.qp_high, 16383u);
  EXPECT_FALSE(c.steering[4].has_dst);
  EXPECT_EQ(c.steering[1].dscp, std::optional<uint8_t>(26));
}

constexpr const char* kMinimal = R"({
  "srv6gw:gateway": {
    "ports": {"host": "h", "fabric": "f"},
    "source-address": "fc00:0:1::1",
    "policies": {"policy": [{"name": "p", "segment-list": [
      {"name": "a", "path-id": 1, "sid": ["fc00:0:2::1"]}]}]}
  }
})";

TEST(Loader, DefaultsMatchTheModelDefaults) {
  auto r = load_config_json(kMinimal);
  const GatewayConfig& c = ok(r);
  GatewayConfig expected;
  expected.host_port.device = "h";
  expected.fabric_port.device = "f";
  expected.source = v6("fc00:0:1::1");
  Policy p;
  p.name = "p";
  p.segment_lists.push_back({"a", 1, 1, false, {v6("fc00:0:2::1")}, ""});
  expected.policies.push_back(p);
  EXPECT_EQ(c, expected);
}

// Replaces the first occurrence of `from` in kMinimal.
std::string minimal_with(const std::string& from, const std::string& to) {
  std::string s = kMinimal;
  const auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

struct YangCase {
  const char* name;
  std::string json;
  std::string path;
  std::string message_part;
};

void PrintTo(const YangCase& c, std::ostream* os) {
  *os << c.name;
}

class LibyangRefuses : public ::testing::TestWithParam<YangCase> {};

TEST_P(LibyangRefuses, WithThePathOfTheNode) {
  const YangCase& c = GetParam();
  ConfigError e = refused(load_config_json(c.json));
  EXPECT_EQ(e.path, c.path) << e.message;
  EXPECT_NE(e.message.find(c.message_part), std::string::npos) << e.message;
}

const std::string kPolicyP = "/srv6gw:gateway/policies/policy[name='p']";

INSTANTIATE_TEST_SUITE_P(
    Cases, LibyangRefuses,
    ::testing::Values(
        YangCase{"bad_type", minimal_with(R"("path-id": 1)", R"("path-id": "one")"),
                 kPolicyP + "/segment-list[name='a']/path-id", "Invalid"},
        YangCase{"out_of_range", minimal_with(R"("path-id": 1)", R"("path-id": 70000)"),
                 kPolicyP + "/segment-list[name='a']/path-id", "70000"},
        YangCase{"bad_address", minimal_with(R"("fc00:0:2::1")", R"("fc00::zz")"),
                 kPolicyP + "/segment-list[name='a']/sid", "fc00::zz"},
        YangCase{"unknown_node", minimal_with(R"("source-address")", R"("source-addr")"),
                 "/srv6gw:gateway", "source-addr"},
        YangCase{"missing_key", minimal_with(R"("name": "a", )", ""), kPolicyP + "/segment-list",
                 "key \"name\""},
        YangCase{"missing_mandatory", minimal_with(R"("source-address": "fc00:0:1::1",)", ""),
                 "/srv6gw:gateway/source-address", "Mandatory"},
        YangCase{"bad_enum", minimal_with(R"("name": "p", )", R"("name": "p", "encap": "gre", )"),
                 kPolicyP + "/encap", "gre"},
        YangCase{"name_pattern", minimal_with(R"("name": "p", )", R"("name": "p q", )"),
                 // libyang fails while reading the key, before the instance exists.
                 "/srv6gw:gateway/policies/policy/name", "a name is"},
        YangCase{"too_many_sids",
                 minimal_with(R"(["fc00:0:2::1"])",
                              R"(["fc00::1","fc00::2","fc00::3","fc00::4","fc00::5","fc00::6",
                                  "fc00::7","fc00::8","fc00::9","fc00::a","fc00::b","fc00::c",
                                  "fc00::d","fc00::e","fc00::f","fc00::10","fc00::11"])"),
                 kPolicyP + "/segment-list[name='a']/sid[.='fc00::11']", "Too many"},
        YangCase{"unknown_policy_reference",
                 minimal_with(R"("policies")",
                              R"("steering": {"rule": [{"id": 1, "prefix": "10.0.0.0/8",
                                  "policy": "nope"}]}, "policies")"),
                 "/srv6gw:gateway/steering/rule[id='1']/policy", "nope"},
        YangCase{"two_match_kinds",
                 minimal_with(R"("policies")",
                              R"("steering": {"rule": [{"id": 1, "prefix": "10.0.0.0/8",
                                  "destination": "10.0.0.1", "policy": "p"}]}, "policies")"),
                 "/srv6gw:gateway/steering/rule[id='1']", "case"},
        YangCase{"no_match",
                 minimal_with(R"("policies")",
                              R"("steering": {"rule": [{"id": 1, "policy": "p"}]}, "policies")"),
                 "/srv6gw:gateway/steering/rule[id='1']", "a rule needs a match"},
        YangCase{"vlan_id_out_of_range",
                 minimal_with(R"("fabric": "f")", R"("fabric": "f", "fabric-vlan": {"id": 4095})"),
                 "/srv6gw:gateway/ports/fabric-vlan/id", "4095"},
        YangCase{"vlan_pcp_out_of_range",
                 minimal_with(R"("fabric": "f")",
                              R"("fabric": "f", "fabric-vlan": {"id": 5,
                                 "dscp-pcp": [{"dscp": 46, "pcp": 8}]})"),
                 "/srv6gw:gateway/ports/fabric-vlan/dscp-pcp[dscp='46']/pcp", "8"},
        YangCase{"vlan_dscp_out_of_range",
                 minimal_with(R"("fabric": "f")",
                              R"("fabric": "f", "fabric-vlan": {"id": 5,
                                 "dscp-pcp": [{"dscp": 64, "pcp": 1}]})"),
                 "/srv6gw:gateway/ports/fabric-vlan/dscp-pcp/dscp", "64"},
        YangCase{"mtu_too_small",
                 minimal_with(R"("fabric": "f")", R"("fabric": "f", "fabric-mtu": 1000)"),
                 "/srv6gw:gateway/ports/fabric-mtu", "1000"},
        YangCase{"bad_container_type", R"({"srv6gw:gateway": {"ports": 5}})", "/srv6gw:gateway",
                 "ports"},
        YangCase{"unknown_module", R"({"other:gateway": {}})", "", "other"},
        YangCase{"truncated", "{ \"srv6gw:gateway\": ", "", "JSON ends before the '}'"},
        YangCase{"truncated_string", "{ \"srv6gw:gate", "", "unterminated JSON string"},
        YangCase{"trailing_text", std::string(kMinimal) + "\n{}", "",
                 "unexpected text after the JSON document (line 9)"},
        YangCase{"unbalanced", R"({"srv6gw:gateway": {]})", "", "unbalanced ']'"},
        YangCase{"not_an_object", "garbage", "", "garbage"},
        YangCase{"empty_text", " \n", "", "empty"},
        YangCase{"empty_object", "{}", "/srv6gw:gateway", "no gateway"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Loader, SemanticErrorsComeFromValidate) {
  // Two segment lists with the same path id: valid YANG, refused by validate().
  const std::string json = minimal_with(R"({"name": "a", "path-id": 1, "sid": ["fc00:0:2::1"]})",
                                        R"({"name": "a", "path-id": 1, "sid": ["fc00:0:2::1"]},
         {"name": "b", "path-id": 1, "sid": ["fc00:0:3::1"]})");
  ConfigError e = refused(load_config_json(json));
  EXPECT_EQ(e.path, kPolicyP + "/segment-list[name='b']/path-id");
  EXPECT_NE(e.message.find("already used"), std::string::npos) << e.message;
}

TEST(Loader, FabricVlanAndMtusMapAndRoundTrip) {
  const std::string json = minimal_with(R"("fabric": "f")", R"("fabric": "f",
      "host-mtu": 9000, "fabric-mtu": 9100,
      "fabric-vlan": {"id": 100, "dscp-pcp": [{"dscp": 46, "pcp": 6}, {"dscp": 0, "pcp": 1}],
                      "host": "keep"})");
  auto r = load_config_json(json);
  const GatewayConfig& c = ok(r);
  EXPECT_EQ(c.host_port.mtu, 9000);
  EXPECT_EQ(c.fabric_port.mtu, 9100);
  EXPECT_FALSE(c.host_port.vlan.enabled);
  const FabricVlan& v = c.fabric_port.vlan;
  EXPECT_TRUE(v.enabled);
  EXPECT_EQ(v.id, 100);
  EXPECT_EQ(v.host, HostVlanMode::keep);
  EXPECT_EQ(pcp_for_dscp(v, 46), 6);
  EXPECT_EQ(pcp_for_dscp(v, 0), 1);
  EXPECT_EQ(pcp_for_dscp(v, 26), 3);  // default: the top three DSCP bits
  EXPECT_EQ(pcp_for_dscp(v, 63), 7);
  auto again = load_config_json(to_json(c));
  EXPECT_EQ(ok(again), c);
  // Absent: no tag, no MTU, strip by default when only the id is given.
  EXPECT_EQ(ok(load_config_json(kMinimal)).fabric_port.vlan, FabricVlan{});
  auto id_only = load_config_json(minimal_with(R"("fabric": "f")", R"("fabric": "f",
      "fabric-vlan": {"id": 7})"));
  EXPECT_EQ(ok(id_only).fabric_port.vlan.host, HostVlanMode::strip);
  EXPECT_EQ(ok(id_only).fabric_port.mtu, 0);
}

// rails.json with ports/fabric-mtu and ports/fabric-vlan, rail gpu1 giving its own MTUs and tag.
std::string rails_with_own_port_settings(const std::string& gpu1_settings) {
  std::string json = read_file(kRoot / "config/examples/rails.json");
  auto put = [&](const std::string& at, const std::string& what) {
    const size_t i = json.find(at);
    EXPECT_NE(i, std::string::npos) << at;
    if (i != std::string::npos) json.insert(i + at.size(), what);
  };
  put(R"("mbufs": 16383,)", R"("fabric-mtu": 9100, "fabric-vlan": {"id": 100},)");
  put(R"("source-address": "fc00:b::1",)", gpu1_settings);
  return json;
}

TEST(Loader, RailsGiveTheirOwnMtusAndVlanElseTheGatewayWideOnes) {
  auto r = load_config_json(rails_with_own_port_settings(
      R"("host-mtu": 4000, "fabric-mtu": 4100,
         "fabric-vlan": {"id": 200, "dscp-pcp": [{"dscp": 26, "pcp": 5}], "host": "keep"},)"));
  const GatewayConfig& c = ok(r);
  ASSERT_EQ(c.rails.size(), 2u);
  const Rail &gpu0 = c.rails[0], &gpu1 = c.rails[1];
  // gpu0 gives none: the gateway-wide ones.
  EXPECT_EQ(gpu0.host_port.mtu, 0);
  EXPECT_EQ(gpu0.fabric_port.mtu, 9100);
  EXPECT_EQ(gpu0.fabric_port.vlan, c.fabric_port.vlan);
  EXPECT_EQ(gpu0.fabric_port.vlan.id, 100);
  EXPECT_EQ(pcp_for_dscp(gpu0.fabric_port.vlan, 26), 3);
  // gpu1 gives all three; its tag replaces the gateway-wide one as a whole.
  EXPECT_EQ(gpu1.host_port.mtu, 4000);
  EXPECT_EQ(gpu1.fabric_port.mtu, 4100);
  EXPECT_EQ(gpu1.fabric_port.vlan.id, 200);
  EXPECT_EQ(gpu1.fabric_port.vlan.host, HostVlanMode::keep);
  EXPECT_EQ(pcp_for_dscp(gpu1.fabric_port.vlan, 26), 5);
  EXPECT_FALSE(gpu1.host_port.vlan.enabled);
  // The output writes a rail's own settings only: it loads back the same.
  const std::string out = to_json(c);
  auto again = load_config_json(out);
  EXPECT_EQ(ok(again), c);
  EXPECT_EQ(out.find("\"id\": 100", out.find("\"rails\"")), std::string::npos) << out;
}

TEST(Loader, RailPortSettingsAreCheckedWhereTheRailGivesThem) {
  ConfigError range =
      refused(load_config_json(rails_with_own_port_settings(R"("host-mtu": 900,)")));
  EXPECT_EQ(range.path, "/srv6gw:gateway/rails/rail[name='gpu1']/host-mtu") << range.message;
  ConfigError dscp = refused(load_config_json(rails_with_own_port_settings(
      R"("fabric-vlan": {"id": 200, "dscp-pcp": [{"dscp": 26, "pcp": 9}]},)")));
  EXPECT_EQ(dscp.path,
            "/srv6gw:gateway/rails/rail[name='gpu1']/fabric-vlan/dscp-pcp[dscp='26']/pcp")
      << dscp.message;
}

TEST(Loader, EngineParametersMapAndRoundTrip) {
  const std::string json = minimal_with(R"("source-address")", R"("engine": {
      "enabled": false, "interval-us": 200, "alpha": "0.5", "decrease": "0.75",
      "min-factor": "0.1", "decrease-gap-us": 300, "exclude-threshold": "8",
      "readmit-threshold": "1.5", "readmit-factor": "0.5", "hold-down-us": 2000,
      "max-hold-down-us": 64000, "recovery-step": "0.25", "recovery-period-us": 700,
      "reflect": false},
    "source-address")");
  auto r = load_config_json(json);
  const GatewayConfig& c = ok(r);
  engine::Params want;
  want.enabled = false;
  want.interval_us = 200;
  want.alpha = 0.5;
  want.decrease = 0.75;
  want.min_factor = 0.1;
  want.decrease_gap_us = 300;
  want.exclude_threshold = 8;
  want.readmit_threshold = 1.5;
  want.readmit_factor = 0.5;
  want.hold_down_us = 2000;
  want.max_hold_down_us = 64000;
  want.recovery_step = 0.25;
  want.recovery_period_us = 700;
  want.reflect = false;
  EXPECT_EQ(c.engine, want);
  auto again = load_config_json(to_json(c));
  EXPECT_EQ(ok(again), c);
}

TEST(Loader, ProbeParametersMapAndRoundTrip) {
  const std::string json = minimal_with(R"("source-address")", R"("probe": {
      "enabled": false, "interval-us": 2000, "timeout-us": 9000, "loss-threshold": 5,
      "hold-down-us": 250000},
    "source-address")");
  auto r = load_config_json(json);
  const GatewayConfig& c = ok(r);
  engine::ProbeParams want;
  want.enabled = false;
  want.interval_us = 2000;
  want.timeout_us = 9000;
  want.loss_threshold = 5;
  want.hold_down_us = 250000;
  EXPECT_EQ(c.probe, want);
  auto again = load_config_json(to_json(c));
  EXPECT_EQ(ok(again), c);
  // Out of the module's range: libyang names the leaf.
  ConfigError e = refused(load_config_json(
      minimal_with(R"("source-address")", R"("probe": {"loss-threshold": 0}, "source-address")")));
  EXPECT_NE(e.path.find("/probe/loss-threshold"), std::string::npos) << e.path << ": " << e.message;
}

TEST(Loader, EngineCrossFieldRulesComeFromValidate) {
  // Valid YANG, but no hysteresis: readmission at or above the exclusion threshold.
  const std::string json = minimal_with(
      R"("source-address")",
      R"("engine": {"exclude-threshold": "2", "readmit-threshold": "2"}, "source-address")");
  ConfigError e = refused(load_config_json(json));
  EXPECT_EQ(e.path, "/srv6gw:gateway/engine/readmit-threshold");
  EXPECT_NE(e.message.find("below exclude-threshold"), std::string::npos) << e.message;
  // Out of the module's range: libyang names the leaf.
  e = refused(load_config_json(
      minimal_with(R"("source-address")", R"("engine": {"alpha": "1.5"}, "source-address")")));
  EXPECT_NE(e.path.find("/engine/alpha"), std::string::npos) << e.path << ": " << e.message;
}

TEST(Loader, PrefixesAreCanonicalisedAsRfc6991Says) {
  // ietf-inet-types: the canonical prefix has the host bits cleared; libyang stores that.
  const std::string json = minimal_with(
      R"("policies")",
      R"("steering": {"rule": [{"id": 1, "prefix": "10.0.1.77/24", "policy": "p"}]}, "policies")");
  auto r = load_config_json(json);
  const GatewayConfig& c = ok(r);
  ASSERT_EQ(c.steering.size(), 1u);
  EXPECT_EQ(c.steering[0].dst, ip("10.0.1.0"));
}

TEST(Loader, MissingFileIsAClearError) {
  ConfigError e = refused(load_config_file("/nonexistent/srv6gw.json"));
  EXPECT_TRUE(e.path.empty());
  EXPECT_NE(e.message.find("/nonexistent/srv6gw.json"), std::string::npos) << e.message;
}

TEST(Loader, WrongYangDirIsAClearError) {
  const char* old = std::getenv("SRV6GW_YANG_DIR");
  const std::string saved = old ? old : "";
  ::setenv("SRV6GW_YANG_DIR", "/nonexistent", 1);
  ConfigError e = refused(load_config_json(kMinimal));
  if (old) {
    ::setenv("SRV6GW_YANG_DIR", saved.c_str(), 1);
  } else {
    ::unsetenv("SRV6GW_YANG_DIR");
  }
  EXPECT_NE(e.message.find("SRV6GW_YANG_DIR"), std::string::npos) << e.message;
  ok(load_config_json(kMinimal));
}

// Every file under invalid/ has a sidecar NAME.expect: "path: P", "message: M" (substring),
// "layer: yang|semantic" (which layer refuses it; the yanglint test reads it too).
TEST(Loader, InvalidExamplesAreRefusedWhereTheirSidecarSays) {
  const auto files = json_files(kRoot / "tests/unit/config/invalid");
  ASSERT_GE(files.size(), 8u);
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    fs::path expect = f;
    expect.replace_extension(".expect");
    ASSERT_TRUE(fs::exists(expect));
    std::string want_path, want_message;
    std::istringstream lines(read_file(expect));
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("path: ", 0) == 0) want_path = line.substr(6);
      if (line.rfind("message: ", 0) == 0) want_message = line.substr(9);
    }
    ASSERT_FALSE(want_message.empty());
    ConfigError e = refused(load_config_file(f.string()));
    EXPECT_EQ(e.path, want_path) << e.message;
    EXPECT_NE(e.message.find(want_message), std::string::npos) << e.message;
  }
}

// A configuration built in code (as the agent does) with every optional field set.
GatewayConfig everything() {
  GatewayConfig c;
  c.host_port.device = "0000:3b:00.0";
  c.fabric_port.device = "1";
  c.queues = 7;
  c.mbufs = 4095;
  c.transparent_mac = true;
  c.fabric_nexthop_mac = net::parse_mac("AA:bb:cc:00:11:22");
  c.host_mac = net::parse_mac("02:00:00:00:00:01");
  c.source = v6("2001:db8::1");
  c.hop_limit = 9;
  c.steering_miss = MissAction::drop;
  c.non_roce = MissAction::drop;
  c.fabric_non_sid = MissAction::drop;
  c.stats_interval_ms = 0;
  c.capacities = {1000, 100, 200, 300, 50, 20, 8};

  Policy p;
  p.name = "Sel.ective_1:x-y";
  p.color = 4000000000u;
  p.endpoint = ip("192.0.2.1");
  p.source = v6("2001:db8::2");
  p.encap = srv6::EncapMode::encaps_red;
  p.usid = {48, 24};  // not in force for encaps-red, but kept as configured
  p.selection = SelectionMode::selective;
  p.flowlet_gap_us = 7;
  p.idle_gap_us = 2500;
  p.spray_opcodes = {8, 7, 0x0a};  // order as given
  p.segment_lists.push_back({"z-first", 32767, 0, true, {v6("2001:db8:1::1")}, ""});
  p.segment_lists.push_back({"a-second",
                             0,
                             1000000,
                             false,
                             {v6("2001:db8:2::1"), v6("2001:db8:3::1"), v6("2001:db8:1::1")},
                             "uplink-2"});
  c.policies.push_back(p);

  Policy u;
  u.name = "adaptive";
  u.encap = srv6::EncapMode::usid;
  u.usid = {48, 16};
  u.selection = SelectionMode::adaptive;
  u.segment_lists.push_back({"m", 3, 5, false, {v6("fc00:0:1:100::"), v6("fc00:0:1:200::")}, ""});
  c.policies.push_back(u);

  SteeringRule r1;
  r1.id = 900;
  r1.kind = SteeringKind::exact;
  r1.dst = ip("2001:db8:9::9");
  r1.dest_qp = 0xFFFFFF;
  r1.dscp = 63;
  r1.policy = "adaptive";
  SteeringRule r2;  // no id: to_json assigns one
  r2.kind = SteeringKind::qp_range;
  r2.qp_low = 0;
  r2.qp_high = 0;
  r2.has_dst = true;
  r2.dst = ip("198.51.100.7");
  r2.policy = p.name;
  SteeringRule r3;
  r3.id = 1;
  r3.kind = SteeringKind::prefix;
  r3.dst = ip("::");
  r3.prefix_len = 0;
  r3.dscp = 0;
  r3.policy = "adaptive";
  SteeringRule r4;
  r4.id = 2;
  r4.kind = SteeringKind::dst_any_qp;
  r4.dst = ip("203.0.113.200");
  r4.policy = p.name;
  c.steering = {r1, r2, r3, r4};

  c.local_sids.push_back({v6("2001:db8:ff::d46"), srv6::LocalSidBehavior::end_dt46});
  c.local_sids.push_back({v6("2001:db8:ff::d4"), srv6::LocalSidBehavior::end_dx4});
  return c;
}

TEST(ToJson, RoundTripsEveryField) {
  GatewayConfig c = everything();
  ASSERT_FALSE(validate(c)) << validate(c)->path << ": " << validate(c)->message;
  const std::string json = to_json(c);
  auto r = load_config_json(json);
  GatewayConfig back = ok(r);
  // The rule without an id got the lowest free one (1 and 2 are taken).
  ASSERT_EQ(back.steering.size(), 4u);
  EXPECT_EQ(back.steering[1].id, 3u);
  back.steering[1].id = 0;
  EXPECT_EQ(back, c) << json;
}

TEST(ToJson, EscapesStrings) {
  GatewayConfig c = everything();
  c.host_port.device = "net_pcap0,rx_pcap=/tmp/a \"b\"\\c.pcap";
  const std::string json = to_json(c);
  GatewayConfig back = ok(load_config_json(json));
  EXPECT_EQ(back.host_port.device, c.host_port.device);
}

}  // namespace
}  // namespace srv6gw::config
