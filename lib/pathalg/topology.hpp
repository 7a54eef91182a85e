// SPDX-License-Identifier: BSD-3-Clause
// Fabric topology model of the path algorithm module: switches (leaf, spine, super-spine, in
// planes and pods) with their SRv6 End SID and uN micro-SID, hosts with their srv6gw gateway
// (source address, locator, local SIDs, agent endpoint) and links (LAGs of members, each
// with a speed; up, down or degraded). Plain values: no DPDK, no libyang, no gRPC.
//
// Two views of one topology: the design (every link, whatever its state: paths and path ids
// come from it, so they survive failures) and the current state (capacities in force:
// usability and weights come from it).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "net/addr.hpp"
#include "net/enum_names.hpp"
#include "srv6/decap.hpp"
#include "srv6/encap.hpp"

namespace srv6gw::pathalg {

using NodeId = uint32_t;
using LinkId = uint32_t;
// A link in one direction: link << 1 | 0 for a -> b, link << 1 | 1 for b -> a. Loads are
// per direction (links are full duplex).
using DirLinkId = uint32_t;
inline constexpr NodeId kNoNode = UINT32_MAX;
inline constexpr LinkId kNoLink = UINT32_MAX;

inline constexpr LinkId link_of(DirLinkId d) {
  return d >> 1;
}
inline constexpr bool is_reverse(DirLinkId d) {
  return (d & 1) != 0;
}
inline constexpr DirLinkId forward(LinkId l) {
  return l << 1;
}
inline constexpr DirLinkId backward(LinkId l) {
  return l << 1 | 1;
}

// YANG enum names (a switch's role; "host" is the hosts list's).
#define SRV6GW_PATHALG_ROLES(X) \
  X(host, "host")               \
  X(leaf, "leaf")               \
  X(spine, "spine")             \
  X(super_spine, "super-spine")
enum class Role : uint8_t { SRV6GW_ENUM_MEMBERS(SRV6GW_PATHALG_ROLES) };
inline constexpr auto kRoleNames = SRV6GW_ENUM_NAMES(SRV6GW_PATHALG_ROLES);
const char* to_string(Role r);
std::optional<Role> parse_role(std::string_view name);

// The srv6gw in front of a host: what other gateways need to reach it and what a controller
// needs to talk to it.
struct Gateway {
  net::Ipv6Addr source;   // outer source address of its encapsulations
  net::Ipv6Addr locator;  // its locator prefix (routed by the fabric to its leaf)
  uint8_t locator_len = 48;
  net::Ipv6Addr decap_sid;  // local SID ending full-SID lists toward it (within the locator)
  srv6::LocalSidBehavior decap_behavior = srv6::LocalSidBehavior::end_dt46;
  std::optional<net::Ipv6Addr> usid;       // block|uDT micro-SID ending uSID lists toward it
  std::optional<net::Ipv6Addr> probe_sid;  // end-probe local SID (policies toward it are probed)
  std::string agent;  // gRPC endpoint of its agent ("unix:/run/srv6gw.sock", "host:port"), or ""
};

struct Node {
  std::string name;  // unique among switches and hosts
  Role role = Role::leaf;
  uint16_t plane = 0;  // multi-plane fabrics: the plane a switch belongs to
  uint16_t pod = 0;    // 3-tier fabrics: the pod of a leaf or spine (informational)
  // Switches: End SID (full-SID lists) and uN micro-SID block|usid|0 (uSID lists). A switch
  // without one of them cannot be a waypoint in that mode.
  std::optional<net::Ipv6Addr> sid;
  std::optional<net::Ipv6Addr> usid;
  // Hosts: the RoCEv2 address (inner destination that steering rules match) and gateway.
  net::IpAddr address;
  Gateway gateway;
  bool is_host() const { return role == Role::host; }
};

#define SRV6GW_PATHALG_LINK_STATES(X) \
  X(up, "up")                         \
  X(down, "down")
enum class LinkState : uint8_t { SRV6GW_ENUM_MEMBERS(SRV6GW_PATHALG_LINK_STATES) };
inline constexpr auto kLinkStateNames = SRV6GW_ENUM_NAMES(SRV6GW_PATHALG_LINK_STATES);
const char* to_string(LinkState s);
std::optional<LinkState> parse_link_state(std::string_view name);

struct Link {
  NodeId a = kNoNode, b = kNoNode;
  uint16_t members = 1;     // LAG members
  uint16_t members_up = 1;  // members in service (<= members)
  uint64_t member_mbps = 400000;
  // Effective capacity in force when set (a degraded link, e.g. 200G of a 400G LAG); it
  // replaces members_up x member_mbps.
  std::optional<uint64_t> capacity_override_mbps;
  LinkState state = LinkState::up;

  // Capacity of the design (all members up).
  uint64_t design_mbps() const { return uint64_t(members) * member_mbps; }
  // Capacity in force: 0 when down.
  uint64_t capacity_mbps() const {
    if (state == LinkState::down) return 0;
    if (capacity_override_mbps) return *capacity_override_mbps;
    return uint64_t(members_up) * member_mbps;
  }
};

// A change of one link's state (failure recomputation input; the fields replace the link's).
struct LinkChange {
  LinkId link = kNoLink;
  LinkState state = LinkState::up;
  uint16_t members_up = 1;
  std::optional<uint64_t> capacity_override_mbps;
};

struct Adjacency {
  NodeId neighbour = kNoNode;
  DirLinkId out = 0;  // the directed link from the node to the neighbour
};

// A refusal naming the offending node by its path in the topology file's YANG tree, e.g.
// "/srv6gw-topology:topology/links/link[a='leaf1'][b='spine9']/b", and why.
struct TopologyError {
  std::string path;
  std::string message;
};

class Topology {
 public:
  std::string name;
  srv6::UsidFormat usid_format;  // of the switches' and gateways' micro-SIDs

  // Builders. Names must be unique; link endpoints must exist (checked by check()).
  NodeId add_node(Node n);
  LinkId add_link(Link l);
  // Convenience: a LAG of `members` links of `member_mbps` each between two nodes by id.
  LinkId connect(NodeId a, NodeId b, uint16_t members, uint64_t member_mbps);

  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Link>& links() const { return links_; }
  const Node& node(NodeId id) const { return nodes_[id]; }
  const Link& link(LinkId id) const { return links_[id]; }
  size_t node_count() const { return nodes_.size(); }
  size_t link_count() const { return links_.size(); }
  // Hosts in node order (the order policies and files list them).
  const std::vector<NodeId>& hosts() const { return hosts_; }

  std::optional<NodeId> find_node(std::string_view name) const;
  // The link between a and b (either orientation), if any.
  std::optional<LinkId> find_link(NodeId a, NodeId b) const;
  // The link a -> b as a directed link, if any.
  std::optional<DirLinkId> find_dir_link(NodeId a, NodeId b) const;
  // Neighbours of a node over every link of the design (down links included).
  std::span<const Adjacency> neighbours(NodeId n) const;
  NodeId from(DirLinkId d) const {
    return is_reverse(d) ? links_[link_of(d)].b : links_[link_of(d)].a;
  }
  NodeId to(DirLinkId d) const {
    return is_reverse(d) ? links_[link_of(d)].a : links_[link_of(d)].b;
  }
  // "leaf1--spine3" (endpoint names in declaration order); directed: "leaf1->spine3".
  std::string link_name(LinkId l) const;
  std::string dir_link_name(DirLinkId d) const;
  uint64_t capacity_mbps(DirLinkId d) const { return links_[link_of(d)].capacity_mbps(); }

  // Applies a state change; refuses (false, message) an unknown link or members_up > members.
  bool apply(const LinkChange& c, std::string* error = nullptr);

 private:
  void rebuild_adjacency() const;
  std::vector<Node> nodes_;
  std::vector<Link> links_;
  std::vector<NodeId> hosts_;
  std::unordered_map<std::string, NodeId> by_name_;
  // Adjacency in CSR form, rebuilt lazily after links are added.
  mutable std::vector<uint32_t> adj_begin_;
  mutable std::vector<Adjacency> adj_;
  mutable bool adj_dirty_ = true;
};

// Semantic checks (the loader runs them after libyang's): unique names, link endpoints that
// exist, no self links, asymmetric or duplicate links (a--b declared twice), members_up <=
// members, duplicate SIDs (switch SIDs, micro-SIDs, gateway addresses and local SIDs across
// the fabric), hosts attached to at least one leaf, a leaf with no link toward any spine
// (disconnected leaf), hosts that cannot reach each other in the design, a uSID that is not
// block|usid|0 in the fabric's format. The first error found, naming the node.
std::optional<TopologyError> check(const Topology& t);

// YANG instance paths of topology nodes, for errors.
std::string switch_path(std::string_view name);
std::string host_path(std::string_view name);
std::string link_path(std::string_view a, std::string_view b);

// ---- generators (examples, tests, benchmarks) ---------------------------------------------
// Addressing (documented in lib/pathalg/README.md): switch i of the fabric gets the End SID
// fc00:0:<0x100+i>::e... see the README for the exact plan; every SID fits a 32/16 uSID
// format under block fc00:0::/32.
struct LeafSpineSpec {
  unsigned leaves = 8;
  unsigned spines = 8;
  unsigned hosts_per_leaf = 16;
  uint16_t lag_members = 2;       // leaf-spine LAG members
  uint64_t member_mbps = 400000;  // per LAG member
  uint64_t host_mbps = 400000;    // host access link
  unsigned planes = 1;            // > 1: `planes` disjoint leaf-spine planes; every host
                                  // attaches to one leaf of each plane
  bool ipv6_hosts = false;        // host addresses fd00:<leaf>::<n> instead of 10.<leaf>.0.<n>
};
Topology make_leaf_spine(const LeafSpineSpec& spec);

// k-ary fat-tree (k even): k pods of k/2 edge (leaf) and k/2 aggregation (spine) switches,
// (k/2)^2 core (super-spine) switches, k/2 hosts per edge switch (k^3/4 hosts).
struct FatTreeSpec {
  unsigned k = 4;
  uint16_t lag_members = 1;
  uint64_t member_mbps = 400000;
  uint64_t host_mbps = 400000;
};
Topology make_fat_tree(const FatTreeSpec& spec);

}  // namespace srv6gw::pathalg
