// SPDX-License-Identifier: BSD-3-Clause
// The gateway's configuration as plain C++ values. The YANG/JSON loader produces it, the
// gRPC agent edits it, validate() (config/validate.hpp) checks it the same way for both, and
// the policy compiler turns it into the immutable objects the data plane reads. No libyang,
// no DPDK.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/params.hpp"
#include "engine/probe_params.hpp"
#include "net/addr.hpp"
#include "net/enum_names.hpp"
#include "srv6/decap.hpp"
#include "srv6/encap.hpp"

namespace srv6gw::config {

// Limits enforced by validate() (and by the YANG module, config/yang/srv6gw.yang).
inline constexpr unsigned kMaxSegmentListsPerPolicy = 64;
inline constexpr uint32_t kMaxWeight = 1000000;  // per segment list; sums fit in 32 bits
inline constexpr uint32_t kMaxQp = 0xFFFFFF;     // BTH DestQP is 24 bits
inline constexpr uint32_t kMaxFlowletGapUs = 10000000;
// balanced mode: idle time after which a flow is placed afresh (and stops counting as load).
// 1 ms: above the worst queueing-delay difference between paths of a leaf-spine fabric
// (hundreds of microseconds with deep buffers), so a move after it cannot reorder, yet short
// next to the pauses between collective steps, after which a QP is placed again.
inline constexpr uint32_t kDefaultIdleGapUs = 1000;
inline constexpr uint16_t kMaxQueues = 128;
// SRH Tag bit 15 marks a reflected path id (docs/design/engine.md): our own ids stay below it.
inline constexpr uint16_t kMaxPathId = 0x7FFF;

// The YANG enum names, each written once here (net/enum_names.hpp): the loader, to_json,
// telemetry and the command-line tools take them from these lists. to_string returns the
// name ("flowlet", "drop", "qp-range"); parse_* accepts it.
#define SRV6GW_SELECTION_MODES(X) \
  X(flow, "flow")                 \
  X(packet, "packet")             \
  X(flowlet, "flowlet")           \
  X(selective, "selective")       \
  X(adaptive, "adaptive")         \
  X(balanced, "balanced")
enum class SelectionMode : uint8_t { SRV6GW_ENUM_MEMBERS(SRV6GW_SELECTION_MODES) };
inline constexpr auto kSelectionModeNames = SRV6GW_ENUM_NAMES(SRV6GW_SELECTION_MODES);
const char* to_string(SelectionMode m);
std::optional<SelectionMode> parse_selection_mode(std::string_view name);

#define SRV6GW_MISS_ACTIONS(X) \
  X(pass, "pass")              \
  X(drop, "drop")
enum class MissAction : uint8_t { SRV6GW_ENUM_MEMBERS(SRV6GW_MISS_ACTIONS) };
inline constexpr auto kMissActionNames = SRV6GW_ENUM_NAMES(SRV6GW_MISS_ACTIONS);
const char* to_string(MissAction a);
std::optional<MissAction> parse_miss_action(std::string_view name);

// YANG names of the srv6 enums the configuration uses (their members are srv6's, and
// srv6::to_string keeps its own diagnostic names, "encaps_red", for logs and telemetry).
inline constexpr std::array<net::EnumName<srv6::EncapMode>, 3> kEncapModeNames{{
    {srv6::EncapMode::encaps, "encaps"},
    {srv6::EncapMode::encaps_red, "encaps-red"},
    {srv6::EncapMode::usid, "usid"},
}};
const char* yang_name(srv6::EncapMode m);
std::optional<srv6::EncapMode> parse_encap_mode(std::string_view name);

inline constexpr std::array<net::EnumName<srv6::LocalSidBehavior>, 4> kLocalSidBehaviorNames{{
    {srv6::LocalSidBehavior::end_dx4, "end-dx4"},
    {srv6::LocalSidBehavior::end_dx6, "end-dx6"},
    {srv6::LocalSidBehavior::end_dt46, "end-dt46"},
    {srv6::LocalSidBehavior::end_probe, "end-probe"},
}};
const char* yang_name(srv6::LocalSidBehavior b);
std::optional<srv6::LocalSidBehavior> parse_local_sid_behavior(std::string_view name);

struct SegmentList {
  std::string name;
  uint16_t path_id = 0;  // written into the SRH Tag; unique within the gateway, <= kMaxPathId
  uint32_t weight = 1;   // 0 = configured but carries no traffic
  bool backup = false;   // used only when every non-backup list is unusable
  std::vector<net::Ipv6Addr> sids;  // 1..16, path order
  // balanced mode: lists with the same load group share one load counter across all
  // policies (a spine uplink). Empty = the first SID (the first hop of a leaf-spine).
  std::string load_group;
  friend bool operator==(const SegmentList&, const SegmentList&) = default;
};

struct Policy {
  std::string name;
  uint32_t color = 0;
  std::optional<net::IpAddr> endpoint;
  std::optional<net::Ipv6Addr> source;  // defaults to the gateway's source address
  srv6::EncapMode encap = srv6::EncapMode::encaps;
  srv6::UsidFormat usid;
  SelectionMode selection = SelectionMode::flow;
  uint32_t flowlet_gap_us = 50;
  uint32_t idle_gap_us = kDefaultIdleGapUs;  // balanced mode
  std::vector<uint8_t> spray_opcodes;        // selective mode: reorder-safe BTH opcodes
  std::vector<SegmentList> segment_lists;
  // The remote gateway's probe SID (an end-probe local SID there): when set, every segment
  // list is probed with its last SID replaced by this one (docs/design/probing.md).
  std::optional<net::Ipv6Addr> probe_sid;
  // DSCP of the probes (0..63); unset: derived from the steering rules (probe_dscp_of below).
  std::optional<uint8_t> probe_dscp;
  // The rails this policy applies on, by rail name (leaf-list policy/rails); empty = every
  // rail. Steering rules inherit their policy's scope: a packet of another rail that matches
  // a rule to this policy takes the steering-miss action (docs/design/rails.md).
  std::vector<std::string> rails;
};
bool operator==(const Policy& a, const Policy& b);  // srv6::UsidFormat has no operator==

// exact: (dst, dest_qp); dst-any-qp: (dst, any QP); qp-range: dest_qp in [qp_low, qp_high],
// optionally for one dst; prefix: longest-prefix match on dst.
#define SRV6GW_STEERING_KINDS(X) \
  X(exact, "exact")              \
  X(dst_any_qp, "dst-any-qp")    \
  X(qp_range, "qp-range")        \
  X(prefix, "prefix")
enum class SteeringKind : uint8_t { SRV6GW_ENUM_MEMBERS(SRV6GW_STEERING_KINDS) };
inline constexpr auto kSteeringKindNames = SRV6GW_ENUM_NAMES(SRV6GW_STEERING_KINDS);
const char* to_string(SteeringKind k);
std::optional<SteeringKind> parse_steering_kind(std::string_view name);

struct SteeringRule {
  SteeringKind kind = SteeringKind::exact;
  net::IpAddr dst;                   // exact, dst_any_qp, prefix; optional for qp_range
  bool has_dst = false;              // qp_range only: restrict to dst
  uint8_t prefix_len = 0;            // prefix
  uint32_t dest_qp = 0;              // exact
  uint32_t qp_low = 0, qp_high = 0;  // qp_range
  std::optional<uint8_t> dscp;       // optional DSCP match
  std::string policy;                // policy name
  uint32_t id = 0;  // YANG list key rule[id]: unique when set; 0 = unset (paths use position)
  friend bool operator==(const SteeringRule&, const SteeringRule&) = default;
};

struct LocalSid {
  net::Ipv6Addr sid;
  srv6::LocalSidBehavior behavior = srv6::LocalSidBehavior::end_dt46;
  friend bool operator==(const LocalSid&, const LocalSid&) = default;
};

// Lossless forwarding (container ports/lossless, docs/design/lossless.md).
struct LosslessConfig {
  bool enabled = true;            // RoCE fabrics are lossless: a drop costs go-back-N (lossless.md)
  uint16_t backlog_frames = 512;  // per direction and worker
  uint16_t ecn_threshold_frames = 128;  // 0 = no CE marking
  uint32_t storm_bound_ms = 200;        // pause-storm watchdog
  // 802.1Qbb priorities made lossless on both ports (PFC), 0..7, each once; RoCE's is
  // usually 3. Where the PMD has no PFC, 802.3x link pause is set instead.
  std::vector<uint8_t> pfc_priorities = {3};
  friend bool operator==(const LosslessConfig&, const LosslessConfig&) = default;
};

// An 802.1Q tag on the outer frame of the fabric side (container ports/fabric-vlan,
// docs/design/vlan-jumbo.md). PCP comes from the inner DSCP through a map whose default is
// the DSCP's top three bits (class selector); `dscp_pcp` overrides single entries.
struct DscpPcp {
  uint8_t dscp = 0;  // 0..63
  uint8_t pcp = 0;   // 0..7
  friend bool operator==(const DscpPcp&, const DscpPcp&) = default;
};
// What a decapsulated frame toward the host carries when its outer frame was tagged: strip =
// untagged (the host port is an access port); keep = the outer frame's first tag as received
// (same TPID, VID and PCP), for a host link that is a trunk of the same VLAN.
#define SRV6GW_HOST_VLAN_MODES(X) \
  X(strip, "strip")               \
  X(keep, "keep")
enum class HostVlanMode : uint8_t { SRV6GW_ENUM_MEMBERS(SRV6GW_HOST_VLAN_MODES) };
inline constexpr auto kHostVlanModeNames = SRV6GW_ENUM_NAMES(SRV6GW_HOST_VLAN_MODES);
const char* to_string(HostVlanMode m);
std::optional<HostVlanMode> parse_host_vlan_mode(std::string_view name);

struct FabricVlan {
  bool enabled = false;           // presence of ports/fabric-vlan
  uint16_t id = 0;                // VID 1..4094
  std::vector<DscpPcp> dscp_pcp;  // overrides of the default map, one per DSCP at most
  HostVlanMode host = HostVlanMode::strip;
  friend bool operator==(const FabricVlan&, const FabricVlan&) = default;
};
// The PCP of `dscp` under `v` (the default map unless an override names it).
uint8_t pcp_for_dscp(const FabricVlan& v, uint8_t dscp);

// IP MTU of a port (bytes after the Ethernet header and tags). 0 = not configured: today's
// behaviour, frames larger than one mbuf segment are refused as oversize and nothing else is
// checked. Set: chained frames are handled and larger IP packets are dropped as too_big.
inline constexpr uint16_t kMinPortMtu = 1280;  // IPv6 minimum
inline constexpr uint16_t kMaxPortMtu = 9600;

struct PortRole {
  std::string device;  // port id ("0") or device name ("net_pcap0", "0000:3b:00.0")
  // How frames leaving by this port are held when its TX queue refuses them. The
  // configuration has one ports/lossless for the pair, copied into both roles.
  LosslessConfig lossless;
  // Fabric role only (ports/fabric-vlan); the host role's stays disabled.
  FabricVlan vlan;
  uint16_t mtu = 0;  // ports/host-mtu or ports/fabric-mtu; 0 = not configured (see above)
  friend bool operator==(const PortRole&, const PortRole&) = default;
};

struct Capacities {
  uint32_t exact_entries = 65536;
  uint32_t lpm4_rules = 4096;
  uint32_t lpm6_rules = 4096;
  uint32_t qp_ranges = 1024;
  uint32_t policies = 1024;
  uint32_t local_sids = 256;
  uint8_t max_sids = 16;  // headroom is sized from this
  friend bool operator==(const Capacities&, const Capacities&) = default;
};

// One rail of a multi-rail gateway (container rails, docs/design/rails.md): a host/fabric
// port pair with its own workers, outer source address, MACs and local SIDs. Policies and
// steering rules are shared by every rail (one table, whatever the number of rails).
struct Rail {
  std::string name;  // list key; the implicit rail of a single-pair configuration is "0"
  PortRole host_port;
  PortRole fabric_port;
  uint16_t queues = 1;                  // RX/TX queues per port = worker lcores of this rail
  std::optional<net::Ipv6Addr> source;  // default: the gateway's source-address
  std::optional<net::MacAddr> fabric_nexthop_mac;  // default: ports/fabric-nexthop-mac
  std::optional<net::MacAddr> host_mac;            // default: ports/host-mac
  std::vector<LocalSid> local_sids;                // matched only on this rail's fabric port
  friend bool operator==(const Rail&, const Rail&) = default;
};
inline constexpr size_t kMaxRails = 64;
inline constexpr const char* kImplicitRailName = "0";

// The configuration without its steering rules: what the policy runtime keeps of the
// configuration in force (it never copies a million rules), copied as a whole so that a
// member added here needs no change there.
struct GatewaySettings {
  PortRole host_port;
  PortRole fabric_port;
  uint16_t queues = 1;  // RX/TX queues per port = worker lcores
  uint32_t mbufs = 8191;
  bool transparent_mac = false;  // keep original MACs instead of the configured ones
  std::optional<net::MacAddr> fabric_nexthop_mac;
  std::optional<net::MacAddr> host_mac;
  net::Ipv6Addr source;  // default outer source address
  uint8_t hop_limit = 64;
  MissAction steering_miss = MissAction::pass;   // RoCEv2 with no steering match
  MissAction non_roce = MissAction::pass;        // ARP, ND, TCP, ... host -> fabric
  MissAction fabric_non_sid = MissAction::pass;  // fabric -> host, not one of our SIDs
  uint32_t stats_interval_ms = 1000;             // periodic stats line; 0 = off
  Capacities capacities;
  engine::Params engine;      // local SR engine (container engine)
  engine::ProbeParams probe;  // path health probing (container probe)
  std::vector<Policy> policies;
  std::vector<LocalSid> local_sids;  // shared: matched on every rail's fabric port
  // Several rails (empty = the single pair above: ports/host, ports/fabric, ports/queues).
  std::vector<Rail> rails;
  friend bool operator==(const GatewaySettings&, const GatewaySettings&) = default;
};

struct GatewayConfig : GatewaySettings {
  std::vector<SteeringRule> steering;
  friend bool operator==(const GatewayConfig&, const GatewayConfig&) = default;
};

// The rails the gateway runs: cfg.rails, or the one implicit rail (kImplicitRailName) made of
// the top-level ports, queues, source and MACs of a single-pair configuration.
std::vector<Rail> effective_rails(const GatewaySettings& cfg);
// The rails a policy applies on as a mask over effective_rails(cfg) (bit i = rail i; rails
// are at most kMaxRails = 64): every bit for a policy without `rails`; a name that is not a
// rail sets no bit (validate() refuses it). The implicit rail is named kImplicitRailName.
inline constexpr uint64_t kAllRails = ~uint64_t(0);
uint64_t policy_rail_mask(const Policy& p, const GatewaySettings& cfg);
// Whether policy `p` applies on the rail named `rail`.
bool policy_on_rail(const Policy& p, std::string_view rail);
// The rail's outer source: its own, else the gateway's source-address.
net::Ipv6Addr rail_source(const GatewaySettings& cfg, const Rail& rail);
// The traffic class a policy's probes go out with (docs/design/probing.md): its probe-dscp
// when set, else the DSCP match of the steering rules that select it when every rule of
// it that has a DSCP match names the same one, else traffic class 0. A DSCP is sent ECT(0),
// like RoCE data (an ECN queue marks such a probe instead of dropping it).
enum class ProbeClassSource : uint8_t { none, configured, steering };
const char* to_string(ProbeClassSource s);  // "none", "configured", "steering"
struct ProbeClass {
  uint8_t traffic_class = 0;  // the outer IPv6 traffic class byte: DSCP << 2 | ECN
  ProbeClassSource source = ProbeClassSource::none;
};
inline constexpr uint8_t kProbeEcn = 2;  // ECT(0)
// One pass over the steering rules; index i answers cfg.policies[i].
std::vector<ProbeClass> probe_classes(const GatewayConfig& cfg);

// A refusal names the offending field by its path in the configuration tree, as YANG does
// (e.g. "/srv6gw:gateway/policies/policy[name='p1']/segment-list[name='a']/sid") and why.
struct ConfigError {
  std::string path;
  std::string message;
  friend bool operator==(const ConfigError&, const ConfigError&) = default;
};

// YANG instance paths of configuration nodes, so that every refusal (validate(), the
// agent's own checks) names nodes the same way.
inline constexpr const char* kRootPath = "/srv6gw:gateway";
std::string policy_path(std::string_view policy);
std::string segment_list_path(std::string_view policy, std::string_view segment_list);
// rule[id='7'], or rule[N] (1-based position among cfg.steering) when the rule has no id.
std::string rule_path(const SteeringRule& rule, size_t index);
std::string local_sid_path(const net::Ipv6Addr& sid);
std::string rail_path(std::string_view rail);
std::string rail_local_sid_path(std::string_view rail, const net::Ipv6Addr& sid);
// One SID of a segment list: <segment_list_path>/sid[.='fc00::1'].
std::string sid_path(const std::string& segment_list_path, const net::Ipv6Addr& sid);

}  // namespace srv6gw::config
