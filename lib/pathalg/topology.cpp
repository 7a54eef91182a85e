// SPDX-License-Identifier: BSD-3-Clause
#include "pathalg/topology.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include "pathalg/cat.hpp"

namespace srv6gw::pathalg {

const char* to_string(Role r) {
  return net::enum_name(kRoleNames, r);
}

std::optional<Role> parse_role(std::string_view name) {
  return net::parse_enum<Role>(kRoleNames, name);
}

const char* to_string(LinkState s) {
  return net::enum_name(kLinkStateNames, s);
}

std::optional<LinkState> parse_link_state(std::string_view name) {
  return net::parse_enum<LinkState>(kLinkStateNames, name);
}

NodeId Topology::add_node(Node n) {
  const NodeId id = NodeId(nodes_.size());
  by_name_.emplace(n.name, id);  // a duplicate keeps the first; check() reports it
  if (n.is_host()) hosts_.push_back(id);
  nodes_.push_back(std::move(n));
  adj_dirty_ = true;
  return id;
}

LinkId Topology::add_link(Link l) {
  links_.push_back(l);
  adj_dirty_ = true;
  return LinkId(links_.size() - 1);
}

LinkId Topology::connect(NodeId a, NodeId b, uint16_t members, uint64_t member_mbps) {
  Link l;
  l.a = a;
  l.b = b;
  l.members = members;
  l.members_up = members;
  l.member_mbps = member_mbps;
  return add_link(l);
}

std::optional<NodeId> Topology::find_node(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

void Topology::rebuild_adjacency() const {
  adj_begin_.assign(nodes_.size() + 1, 0);
  for (const Link& l : links_) {
    if (l.a < nodes_.size()) ++adj_begin_[l.a + 1];
    if (l.b < nodes_.size()) ++adj_begin_[l.b + 1];
  }
  for (size_t i = 1; i < adj_begin_.size(); ++i) adj_begin_[i] += adj_begin_[i - 1];
  adj_.assign(adj_begin_.back(), Adjacency{});
  std::vector<uint32_t> fill(adj_begin_.begin(), adj_begin_.end() - 1);
  for (LinkId i = 0; i < links_.size(); ++i) {
    const Link& l = links_[i];
    if (l.a >= nodes_.size() || l.b >= nodes_.size()) continue;
    adj_[fill[l.a]++] = Adjacency{l.b, forward(i)};
    adj_[fill[l.b]++] = Adjacency{l.a, backward(i)};
  }
  // Neighbours in node order: enumeration order then follows node ids, independent of the
  // order links were declared in.
  for (size_t n = 0; n < nodes_.size(); ++n) {
    std::sort(adj_.begin() + adj_begin_[n], adj_.begin() + adj_begin_[n + 1],
              [](const Adjacency& x, const Adjacency& y) {
                return x.neighbour != y.neighbour ? x.neighbour < y.neighbour : x.out < y.out;
              });
  }
  adj_dirty_ = false;
}

std::span<const Adjacency> Topology::neighbours(NodeId n) const {
  if (adj_dirty_) rebuild_adjacency();
  return {adj_.data() + adj_begin_[n], adj_begin_[n + 1] - adj_begin_[n]};
}

std::optional<DirLinkId> Topology::find_dir_link(NodeId a, NodeId b) const {
  if (a >= nodes_.size() || b >= nodes_.size()) return std::nullopt;
  for (const Adjacency& adj : neighbours(a)) {
    if (adj.neighbour == b) return adj.out;
  }
  return std::nullopt;
}

std::optional<LinkId> Topology::find_link(NodeId a, NodeId b) const {
  auto d = find_dir_link(a, b);
  if (!d) return std::nullopt;
  return link_of(*d);
}

std::string Topology::link_name(LinkId l) const {
  return nodes_[links_[l].a].name + "--" + nodes_[links_[l].b].name;
}

std::string Topology::dir_link_name(DirLinkId d) const {
  return nodes_[from(d)].name + "->" + nodes_[to(d)].name;
}

bool Topology::apply(const LinkChange& c, std::string* error) {
  if (c.link >= links_.size()) {
    if (error) *error = "unknown link " + std::to_string(c.link);
    return false;
  }
  Link& l = links_[c.link];
  if (c.members_up > l.members) {
    if (error) {
      *error = link_name(c.link) + ": members-up " + std::to_string(c.members_up) +
               " exceeds its " + std::to_string(l.members) + " members";
    }
    return false;
  }
  l.state = c.state;
  l.members_up = c.members_up;
  l.capacity_override_mbps = c.capacity_override_mbps;
  return true;
}

// ---- checks --------------------------------------------------------------------------------

namespace {
constexpr const char* kRoot = "/srv6gw-topology:topology";

std::string quoted(std::string_view v) {
  std::string s = "'";
  s += v;
  s += '\'';
  return s;
}

TopologyError err(std::string path, std::string message) {
  return TopologyError{std::move(path), std::move(message)};
}

bool in_block(const net::Ipv6Addr& a, const net::Ipv6Addr& b, unsigned bytes) {
  return std::equal(a.bytes.begin(), a.bytes.begin() + bytes, b.bytes.begin());
}
}  // namespace

std::string switch_path(std::string_view name) {
  return std::string(kRoot) + "/switches/switch[name=" + quoted(name) + "]";
}
std::string host_path(std::string_view name) {
  return std::string(kRoot) + "/hosts/host[name=" + quoted(name) + "]";
}
std::string link_path(std::string_view a, std::string_view b) {
  return std::string(kRoot) + "/links/link[a=" + quoted(a) + "][b=" + quoted(b) + "]";
}

std::optional<TopologyError> check(const Topology& t) {
  const auto& nodes = t.nodes();
  auto path_of = [&](NodeId n) {
    return nodes[n].is_host() ? host_path(nodes[n].name) : switch_path(nodes[n].name);
  };
  {
    std::set<std::string_view> names;
    for (NodeId n = 0; n < nodes.size(); ++n) {
      if (nodes[n].name.empty()) return err(path_of(n) + "/name", "a node needs a name");
      if (!names.insert(nodes[n].name).second) {
        return err(path_of(n), "duplicate name " + quoted(nodes[n].name) +
                                   " (names are unique among switches and hosts)");
      }
    }
  }
  // Links: endpoints exist, no self link, a--b once (b--a is the same link).
  std::map<std::pair<NodeId, NodeId>, LinkId> seen;
  for (LinkId l = 0; l < t.link_count(); ++l) {
    const Link& k = t.link(l);
    const bool a_ok = k.a < nodes.size(), b_ok = k.b < nodes.size();
    if (!a_ok || !b_ok) {
      return err(std::string(kRoot) + "/links/link",
                 "link " + std::to_string(l) + " names a node that does not exist");
    }
    const std::string lp = link_path(nodes[k.a].name, nodes[k.b].name);
    if (k.a == k.b)
      return err(lp + "/b", "a link cannot connect " + quoted(nodes[k.a].name) + " to itself");
    if (nodes[k.a].is_host() && nodes[k.b].is_host()) {
      return err(lp, "a link cannot connect two hosts");
    }
    if (k.members == 0) return err(lp + "/members", "a link needs at least one member");
    if (k.members_up > k.members) {
      return err(lp + "/members-up", "members-up " + std::to_string(k.members_up) +
                                         " exceeds members " + std::to_string(k.members));
    }
    if (k.member_mbps == 0) return err(lp + "/member-gbps", "member speed must not be 0");
    const auto key = std::minmax(k.a, k.b);
    if (auto [it, fresh] = seen.emplace(std::pair{key.first, key.second}, l); !fresh) {
      const Link& o = t.link(it->second);
      const bool reversed = o.a != k.a;
      const bool same = o.members == k.members && o.member_mbps == k.member_mbps &&
                        o.state == k.state && o.members_up == k.members_up &&
                        o.capacity_override_mbps == k.capacity_override_mbps;
      if (reversed && !same) {
        return err(lp, "asymmetric link: declared as " + t.link_name(it->second) + " and " +
                           t.link_name(l) +
                           " with different members, speed or state (declare a link once; "
                           "its capacity holds in both directions)");
      }
      return err(lp, "duplicate link: " + quoted(nodes[k.a].name) + " and " +
                         quoted(nodes[k.b].name) + " are already connected by " +
                         t.link_name(it->second) + " (a LAG is one link with members)");
    }
  }
  // SIDs and gateway addresses unique across the fabric; uSIDs in one block.
  std::map<net::Ipv6Addr, std::string> owners;
  auto claim = [&](const net::Ipv6Addr& a,
                   const std::string& where) -> std::optional<TopologyError> {
    if (auto [it, fresh] = owners.emplace(a, where); !fresh) {
      return err(where,
                 "duplicate SID/address " + net::to_string(a) + ", already used by " + it->second);
    }
    return std::nullopt;
  };
  const net::Ipv6Addr* first_usid = nullptr;
  for (NodeId n = 0; n < nodes.size(); ++n) {
    const Node& node = nodes[n];
    const std::string p = path_of(n);
    if (!node.is_host()) {
      if (node.sid) {
        if (auto e = claim(*node.sid, p + "/sid")) return e;
      }
      if (node.usid) {
        if (auto e = claim(*node.usid, p + "/usid")) return e;
        if (!first_usid) first_usid = &*node.usid;
      }
      continue;
    }
    const Gateway& g = node.gateway;
    if (auto e = claim(g.source, p + "/gateway/source-address")) return e;
    if (auto e = claim(g.decap_sid, p + "/gateway/decap-sid")) return e;
    if (g.usid) {
      if (auto e = claim(*g.usid, p + "/gateway/usid")) return e;
    }
    if (g.probe_sid) {
      if (auto e = claim(*g.probe_sid, p + "/gateway/probe-sid")) return e;
    }
    if (node.address.family == net::Family::none) {
      return err(p + "/address", "a host needs an address");
    }
  }
  // Micro-SIDs: block|usid|0 in the fabric's format, all in the first one's block.
  {
    const unsigned block = t.usid_format.block_bits / 8, usid = t.usid_format.usid_bits / 8;
    auto bad_usid = [&](const net::Ipv6Addr& a) -> std::optional<std::string> {
      if (first_usid && !in_block(a, *first_usid, block)) {
        return "is not in the locator block of " + net::to_string(*first_usid);
      }
      for (unsigned i = block + usid; i < 16; ++i) {
        if (a.bytes[i] != 0) return std::string("has bits set after its micro-SID");
      }
      bool zero = true;
      for (unsigned i = block; i < block + usid; ++i) zero &= a.bytes[i] == 0;
      if (zero) return std::string("has an all-zero micro-SID");
      return std::nullopt;
    };
    for (NodeId n = 0; n < nodes.size(); ++n) {
      const Node& node = nodes[n];
      const auto* u = node.is_host() ? (node.gateway.usid ? &*node.gateway.usid : nullptr)
                                     : (node.usid ? &*node.usid : nullptr);
      if (!u) continue;
      if (auto why = bad_usid(*u)) {
        return err(path_of(n) + (node.is_host() ? "/gateway/usid" : "/usid"),
                   "micro-SID " + net::to_string(*u) + " " + *why + " (usid-format " +
                       std::to_string(t.usid_format.block_bits) + "/" +
                       std::to_string(t.usid_format.usid_bits) + ")");
      }
    }
  }
  // Attachments: every host on at least one switch, every leaf with an uplink.
  for (NodeId n = 0; n < nodes.size(); ++n) {
    bool has_switch = false, has_uplink = false;
    for (const Adjacency& a : t.neighbours(n)) {
      const Node& o = nodes[a.neighbour];
      if (!o.is_host()) has_switch = true;
      if (o.role == Role::spine || o.role == Role::super_spine) has_uplink = true;
    }
    if (nodes[n].is_host() && !has_switch) {
      return err(path_of(n), "host " + quoted(nodes[n].name) + " is attached to no switch");
    }
    if (nodes[n].role == Role::leaf && !has_uplink && t.hosts().size() > 0) {
      // A fabric of one leaf has no spine: only then is a leaf without uplinks fine.
      bool any_spine = std::any_of(nodes.begin(), nodes.end(), [](const Node& x) {
        return x.role == Role::spine || x.role == Role::super_spine;
      });
      if (any_spine) {
        return err(path_of(n),
                   "disconnected leaf " + quoted(nodes[n].name) + ": it has no link to any spine");
      }
    }
  }
  // Every host reaches every other host through switches (design topology).
  if (!t.hosts().empty()) {
    const NodeId start = t.hosts().front();
    std::vector<char> reached(nodes.size(), 0);
    std::vector<NodeId> queue{start};
    reached[start] = 1;
    for (size_t i = 0; i < queue.size(); ++i) {
      const NodeId u = queue[i];
      if (nodes[u].is_host() && u != start) continue;  // hosts are not transit
      for (const Adjacency& a : t.neighbours(u)) {
        if (!reached[a.neighbour]) {
          reached[a.neighbour] = 1;
          queue.push_back(a.neighbour);
        }
      }
    }
    for (NodeId n = 0; n < nodes.size(); ++n) {
      if (!reached[n]) {
        return err(path_of(n), quoted(nodes[n].name) + " is not connected to host " +
                                   quoted(nodes[start].name) + " through the fabric");
      }
    }
  }
  return std::nullopt;
}

// ---- generators ----------------------------------------------------------------------------

namespace {

// fc00:0:<hi>:<lo>:: style helpers. Every SID lives in block fc00:0::/32 with its micro-SID
// in bits 32..47 (F3216 format).
net::Ipv6Addr sid16(uint16_t usid, uint16_t function = 0) {
  net::Ipv6Addr a;
  a.bytes[0] = 0xfc;
  a.bytes[4] = uint8_t(usid >> 8);
  a.bytes[5] = uint8_t(usid);
  a.bytes[14] = uint8_t(function >> 8);
  a.bytes[15] = uint8_t(function);
  return a;
}

Node make_switch(std::string name, Role role, uint16_t usid_value, uint16_t plane = 0,
                 uint16_t pod = 0) {
  Node n;
  n.name = std::move(name);
  n.role = role;
  n.plane = plane;
  n.pod = pod;
  n.sid = sid16(usid_value, 0xe);  // fc00:0:<usid>::e  End
  n.usid = sid16(usid_value);      // fc00:0:<usid>::   uN
  return n;
}

// Host h (0-based): gateway micro-SID 0x1000 + h (up to 0xefff hosts), locator
// fc00:0:<usid>::/48, decap SID fc00:0:<usid>::d46, probe fc00:0:<usid>::f, source
// fc00:0:<usid>::1. Address 10.<h/256>.<h%256>... see README.
Node make_host(unsigned h, bool ipv6) {
  Node n;
  n.name = cat("h", std::to_string(h));
  n.role = Role::host;
  const uint16_t u = uint16_t(0x1000 + h);
  n.gateway.source = sid16(u, 1);
  n.gateway.locator = sid16(u);
  n.gateway.locator_len = 48;
  n.gateway.decap_sid = sid16(u, 0xd46);
  n.gateway.usid = sid16(u);
  n.gateway.probe_sid = sid16(u, 0xf);
  if (ipv6) {
    net::Ipv6Addr a;
    a.bytes[0] = 0xfd;
    a.bytes[14] = uint8_t(h >> 8);
    a.bytes[15] = uint8_t(h);
    n.address = net::IpAddr::v6(a);
  } else {
    net::Ipv4Addr a{{10, uint8_t(h >> 16), uint8_t(h >> 8), uint8_t(h)}};
    n.address = net::IpAddr::v4(a);
  }
  return n;
}

}  // namespace

Topology make_leaf_spine(const LeafSpineSpec& s) {
  Topology t;
  t.name = std::to_string(s.planes) + "-plane leaf-spine " + std::to_string(s.leaves) + "x" +
           std::to_string(s.spines) + "x" + std::to_string(s.hosts_per_leaf);
  const unsigned planes = std::max(1u, s.planes);
  std::vector<std::vector<NodeId>> leaves(planes), spines(planes);
  uint16_t usid = 0x100;
  for (unsigned p = 0; p < planes; ++p) {
    const std::string pre = planes > 1 ? cat("p", std::to_string(p), "-") : std::string();
    for (unsigned i = 0; i < s.leaves; ++i) {
      leaves[p].push_back(t.add_node(
          make_switch(cat(pre, "leaf", std::to_string(i)), Role::leaf, usid++, uint16_t(p))));
    }
    for (unsigned i = 0; i < s.spines; ++i) {
      spines[p].push_back(t.add_node(
          make_switch(cat(pre, "spine", std::to_string(i)), Role::spine, usid++, uint16_t(p))));
    }
  }
  unsigned h = 0;
  for (unsigned i = 0; i < s.leaves; ++i) {
    for (unsigned j = 0; j < s.hosts_per_leaf; ++j, ++h) {
      const NodeId host = t.add_node(make_host(h, s.ipv6_hosts));
      for (unsigned p = 0; p < planes; ++p) t.connect(host, leaves[p][i], 1, s.host_mbps);
    }
  }
  for (unsigned p = 0; p < planes; ++p) {
    for (NodeId leaf : leaves[p]) {
      for (NodeId spine : spines[p]) t.connect(leaf, spine, s.lag_members, s.member_mbps);
    }
  }
  return t;
}

Topology make_fat_tree(const FatTreeSpec& s) {
  Topology t;
  const unsigned k = s.k, half = k / 2;
  t.name = std::to_string(k) + "-ary fat-tree";
  uint16_t usid = 0x100;
  std::vector<std::vector<NodeId>> edge(k), agg(k);
  std::vector<NodeId> core;
  for (unsigned p = 0; p < k; ++p) {
    for (unsigned i = 0; i < half; ++i) {
      edge[p].push_back(
          t.add_node(make_switch(cat("pod", std::to_string(p), "-leaf", std::to_string(i)),
                                 Role::leaf, usid++, 0, uint16_t(p))));
    }
    for (unsigned i = 0; i < half; ++i) {
      agg[p].push_back(
          t.add_node(make_switch(cat("pod", std::to_string(p), "-spine", std::to_string(i)),
                                 Role::spine, usid++, 0, uint16_t(p))));
    }
  }
  for (unsigned c = 0; c < half * half; ++c) {
    core.push_back(
        t.add_node(make_switch(cat("core", std::to_string(c)), Role::super_spine, usid++)));
  }
  unsigned h = 0;
  for (unsigned p = 0; p < k; ++p) {
    for (unsigned i = 0; i < half; ++i) {
      for (unsigned j = 0; j < half; ++j, ++h) {
        t.connect(t.add_node(make_host(h, false)), edge[p][i], 1, s.host_mbps);
      }
    }
  }
  for (unsigned p = 0; p < k; ++p) {
    for (unsigned i = 0; i < half; ++i) {
      for (unsigned j = 0; j < half; ++j)
        t.connect(edge[p][i], agg[p][j], s.lag_members, s.member_mbps);
    }
    // Aggregation switch j of every pod connects to core switches j*half .. j*half+half-1.
    for (unsigned j = 0; j < half; ++j) {
      for (unsigned c = 0; c < half; ++c) {
        t.connect(agg[p][j], core[j * half + c], s.lag_members, s.member_mbps);
      }
    }
  }
  return t;
}

}  // namespace srv6gw::pathalg
