// SPDX-License-Identifier: BSD-3-Clause
// The gateway's configuration as plain C++ values. The YANG/JSON loader produces it, the
// gRPC agent (later) edits it, `validate()` checks it the same way for both, and the policy
// compiler turns it into the immutable objects the data plane reads. No libyang, no DPDK.
#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/params.hpp"
#include "engine/probe_params.hpp"
#include "net/addr.hpp"
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
// SRH Tag bit 15 marks a reflected path id (docs/engine.md): our own ids stay below it.
inline constexpr uint16_t kMaxPathId = 0x7FFF;

// to_string returns the YANG enum name ("flowlet", "drop", "qp-range"); parse_* accepts it.
enum class SelectionMode : uint8_t { flow, packet, flowlet, selective, adaptive, balanced };
const char* to_string(SelectionMode m);
std::optional<SelectionMode> parse_selection_mode(std::string_view name);

enum class MissAction : uint8_t { pass, drop };
const char* to_string(MissAction a);
std::optional<MissAction> parse_miss_action(std::string_view name);

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
  // list is probed with its last SID replaced by this one (docs/probing.md).
  std::optional<net::Ipv6Addr> probe_sid;
};
bool operator==(const Policy& a, const Policy& b);  // srv6::UsidFormat has no operator==

enum class SteeringKind : uint8_t {
  exact,       // (dst, dest_qp)
  dst_any_qp,  // (dst, any QP)
  qp_range,    // dest_qp in [qp_low, qp_high], optionally for one dst
  prefix,      // longest-prefix match on dst
};
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

struct PortRole {
  std::string device;  // port id ("0") or device name ("net_pcap0", "0000:3b:00.0")
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

struct GatewayConfig {
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
  std::vector<SteeringRule> steering;
  std::vector<LocalSid> local_sids;
  friend bool operator==(const GatewayConfig&, const GatewayConfig&) = default;
};

// A refusal names the offending field by its path in the configuration tree, as YANG does
// (e.g. "/srv6gw:gateway/policies/policy[name='p1']/segment-list[name='a']/sid") and why.
struct ConfigError {
  std::string path;
  std::string message;
  friend bool operator==(const ConfigError&, const ConfigError&) = default;
};

// Semantic checks shared by the file loader and the gRPC agent: SID counts, weights, modes,
// references to unknown policies, duplicates, capacity limits. Returns the first error.
std::optional<ConfigError> validate(const GatewayConfig& cfg);

// The parts of validate() that look at one object alone (with the gateway-wide settings
// it depends on: source address, hop limit, capacities/max-sids). validate() runs them on
// every object; the gRPC agent runs them only on the objects a batch changes and checks
// the relations between objects (unique keys, matches and path ids, references, capacities,
// overlaps) against indexes of the running configuration (lib/agent/config_index.hpp).
std::optional<ConfigError> check_policy(const GatewayConfig& settings, const Policy& p);
// `index` (0-based position) only names rules without an id.
std::optional<ConfigError> check_rule(const SteeringRule& r, size_t index);
std::optional<ConfigError> check_local_sid(const LocalSid& ls);

// Messages of the cross-object refusals, shared so both validations word them alike.
std::string local_sid_conflict(const net::Ipv6Addr& sid, std::string_view policy,
                               std::string_view segment_list);
std::string path_id_conflict(uint16_t path_id, std::string_view policy,
                             std::string_view segment_list);

// What a steering rule matches on; two rules with equal matches are duplicates. Fields
// a kind does not match on are zero.
struct SteeringMatch {
  SteeringKind kind = SteeringKind::exact;
  net::Family family = net::Family::none;
  bool has_dst = false;
  uint8_t prefix_len = 0;
  int16_t dscp = -1;  // -1 = any
  std::array<uint8_t, 16> dst{};
  uint32_t dest_qp = 0, qp_low = 0, qp_high = 0;
  friend bool operator==(const SteeringMatch&, const SteeringMatch&) = default;
  friend auto operator<=>(const SteeringMatch&, const SteeringMatch&) = default;
};
struct SteeringMatchHash {
  size_t operator()(const SteeringMatch& m) const;
};
SteeringMatch steering_match(const SteeringRule& r);
// QP ranges of one scope (destination or none, DSCP) must not overlap: the scope of a
// qp-range rule (its match without the range).
SteeringMatch qp_range_scope(const SteeringRule& r);

// Rules per table, against capacities.
struct SteeringCounts {
  int64_t exact = 0, lpm4 = 0, lpm6 = 0, qp_ranges = 0;
  void add(const SteeringRule& r, int delta);
  // The refusal naming `r` when the table `r` goes into is over capacity.
  std::optional<ConfigError> check(const Capacities& caps, const SteeringRule& r,
                                   size_t index) const;
};

// YANG instance paths of configuration nodes, for errors raised outside validate() (the
// agent's own checks) so that every refusal names nodes the same way.
std::string policy_path(std::string_view policy);
std::string segment_list_path(std::string_view policy, std::string_view segment_list);
// rule[id='7'], or rule[N] (1-based position among cfg.steering) when the rule has no id.
std::string rule_path(const SteeringRule& rule, size_t index);
std::string local_sid_path(const net::Ipv6Addr& sid);

}  // namespace srv6gw::config
