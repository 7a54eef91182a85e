// SPDX-License-Identifier: BSD-3-Clause
// libyang front end of topology files: JSON -> libyang data tree (types, structure) ->
// Topology -> check() (semantics). Errors keep libyang's data paths.
#include "pathalg/loader.hpp"

#include <libyang/libyang.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "config/loader.hpp"
#include "config/yang_util.hpp"
#include "pathalg/cat.hpp"

namespace srv6gw::pathalg {
namespace {

constexpr const char* kModule = "srv6gw-topology";
constexpr const char* kRoot = "/srv6gw-topology:topology";

using config::yang::as_uint;
using config::yang::CtxPtr;
using config::yang::fail;
using config::yang::fail_at;
using config::yang::for_children;
using config::yang::ScopedLyLogCapture;
using config::yang::TreePtr;
using config::yang::value_of;

TopologyError as_topology_error(const config::ConfigError& e) {
  return TopologyError{e.path, e.message};
}

// decimal64 Gbit/s with 3 fraction digits -> Mbit/s, exactly.
uint64_t as_mbps(const lyd_node* n) {
  const auto v = value_of(n);
  const auto dot = v.find('.');
  const std::string_view whole = v.substr(0, dot);
  std::string frac = dot == std::string_view::npos ? "" : std::string(v.substr(dot + 1));
  frac.resize(3, '0');
  uint64_t w = 0, f = 0;
  auto [e1, c1] = std::from_chars(whole.data(), whole.data() + whole.size(), w);
  auto [e2, c2] = std::from_chars(frac.data(), frac.data() + 3, f);
  if (c1 != std::errc() || c2 != std::errc()) fail(n, "expected Gbit/s");
  return w * 1000 + f;
}

net::Ipv6Addr as_ipv6(const lyd_node* n) {
  auto a = net::parse_ipv6(value_of(n));
  if (!a) fail(n, "expected an IPv6 address");
  return *a;
}

Topology map_topology(const lyd_node* top) {
  Topology t;
  struct PendingLink {
    const lyd_node* node;
    std::string a, b;
    Link link;
    bool members_up_set = false;
  };
  std::vector<PendingLink> links;
  for_children(top, [&](const lyd_node* c, std::string_view name) {
    if (name == "name") {
      t.name = std::string(value_of(c));
    } else if (name == "usid-format") {
      for_children(c, [&](const lyd_node* f, std::string_view fn) {
        if (fn == "block-bits") t.usid_format.block_bits = as_uint<uint8_t>(f);
        if (fn == "usid-bits") t.usid_format.usid_bits = as_uint<uint8_t>(f);
      });
    } else if (name == "switches") {
      for_children(c, [&](const lyd_node* s, std::string_view) {
        Node n;
        for_children(s, [&](const lyd_node* f, std::string_view fn) {
          if (fn == "name") n.name = std::string(value_of(f));
          if (fn == "role") {
            auto r = parse_role(value_of(f));
            if (!r) fail(f, "unknown role");
            n.role = *r;
          }
          if (fn == "plane") n.plane = as_uint<uint16_t>(f);
          if (fn == "pod") n.pod = as_uint<uint16_t>(f);
          if (fn == "sid") n.sid = as_ipv6(f);
          if (fn == "usid") n.usid = as_ipv6(f);
        });
        t.add_node(std::move(n));
      });
    } else if (name == "hosts") {
      for_children(c, [&](const lyd_node* h, std::string_view) {
        Node n;
        n.role = Role::host;
        for_children(h, [&](const lyd_node* f, std::string_view fn) {
          if (fn == "name") n.name = std::string(value_of(f));
          if (fn == "address") {
            auto a = net::parse_ip(value_of(f));
            if (!a) fail(f, "expected an IP address");
            n.address = *a;
          }
          if (fn != "gateway") return;
          for_children(f, [&](const lyd_node* g, std::string_view gn) {
            Gateway& gw = n.gateway;
            if (gn == "source-address") gw.source = as_ipv6(g);
            if (gn == "decap-sid") gw.decap_sid = as_ipv6(g);
            if (gn == "usid") gw.usid = as_ipv6(g);
            if (gn == "probe-sid") gw.probe_sid = as_ipv6(g);
            if (gn == "agent") gw.agent = std::string(value_of(g));
            if (gn == "decap-behavior") {
              auto b = config::parse_local_sid_behavior(value_of(g));
              if (!b) fail(g, "unknown behavior");
              gw.decap_behavior = *b;
            }
            if (gn == "locator") {
              const auto v = value_of(g);
              const auto slash = v.find('/');
              auto a = net::parse_ipv6(v.substr(0, slash));
              if (!a || slash == std::string_view::npos) fail(g, "expected an IPv6 prefix");
              gw.locator = *a;
              unsigned len = 0;
              std::from_chars(v.data() + slash + 1, v.data() + v.size(), len);
              gw.locator_len = uint8_t(len);
            }
          });
        });
        t.add_node(std::move(n));
      });
    } else if (name == "links") {
      for_children(c, [&](const lyd_node* l, std::string_view) {
        PendingLink p{l, {}, {}, {}, false};
        p.link.members = 1;
        p.link.member_mbps = 400000;
        for_children(l, [&](const lyd_node* f, std::string_view fn) {
          if (fn == "a") p.a = std::string(value_of(f));
          if (fn == "b") p.b = std::string(value_of(f));
          if (fn == "members") p.link.members = as_uint<uint16_t>(f);
          if (fn == "member-gbps") p.link.member_mbps = as_mbps(f);
          if (fn == "state") {
            auto s = parse_link_state(value_of(f));
            if (!s) fail(f, "unknown link state");
            p.link.state = *s;
          }
          if (fn == "members-up") {
            p.link.members_up = as_uint<uint16_t>(f);
            p.members_up_set = true;
          }
          if (fn == "capacity-gbps") p.link.capacity_override_mbps = as_mbps(f);
        });
        if (!p.members_up_set) p.link.members_up = p.link.members;
        links.push_back(std::move(p));
      });
    }
  });
  // Node names are list keys (unique per list); a switch and a host may still share one.
  for (const Node& n : t.nodes()) {
    if (auto id = t.find_node(n.name); id && &t.node(*id) != &n) {
      fail_at(n.is_host() ? host_path(n.name) : switch_path(n.name),
              cat("name '", n.name, "' is used by a switch and a host"));
    }
  }
  for (PendingLink& p : links) {
    const auto a = t.find_node(p.a);
    const auto b = t.find_node(p.b);
    const std::string lp = link_path(p.a, p.b);
    if (!a) fail_at(lp + "/a", cat("unknown switch or host '", p.a, "'"));
    if (!b) fail_at(lp + "/b", cat("unknown switch or host '", p.b, "'"));
    p.link.a = *a;
    p.link.b = *b;
    t.add_link(p.link);
  }
  return t;
}

std::string gbps_text(uint64_t mbps) {
  std::string s = std::to_string(mbps / 1000);
  if (mbps % 1000) {
    char frac[8];
    std::snprintf(frac, sizeof frac, ".%03u", unsigned(mbps % 1000));
    s += frac;
  }
  return s;
}

}  // namespace

TopologyResult load_topology_json(std::string_view json) {
  ScopedLyLogCapture capture;
  const std::string dir = config::find_yang_dir();
  if (dir.empty()) return TopologyError{"", "YANG folder not found (set SRV6GW_YANG_DIR)"};
  auto made = config::yang::make_context(dir, kModule);
  if (auto* e = std::get_if<config::ConfigError>(&made)) return as_topology_error(*e);
  CtxPtr ctx = std::move(std::get<CtxPtr>(made));
  const std::string text(json);
  lyd_node* raw = nullptr;
  const LY_ERR rc = lyd_parse_data_mem(ctx.get(), text.c_str(), LYD_JSON, LYD_PARSE_STRICT,
                                       LYD_VALIDATE_PRESENT, &raw);
  TreePtr tree(raw);
  if (rc != LY_SUCCESS) {
    return as_topology_error(config::yang::libyang_error(ctx.get(), "invalid topology"));
  }
  const lyd_node* top = config::yang::find_top(tree.get(), kModule, "topology");
  if (!top) return TopologyError{kRoot, "the file has no topology"};
  Topology t;
  try {
    t = map_topology(top);
  } catch (const config::yang::NodeError& e) {
    return as_topology_error(e.error);
  }
  if (auto e = check(t)) return *e;
  return t;
}

TopologyResult load_topology_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return TopologyError{"", cat("cannot open ", path, ": ", std::strerror(errno))};
  std::ostringstream text;
  text << in.rdbuf();
  return load_topology_json(text.str());
}

std::string to_json(const Topology& t) {
  using Json = nlohmann::ordered_json;  // keys in the YANG module's order
  Json switches = Json::array();
  for (const Node& n : t.nodes()) {
    if (n.is_host()) continue;
    Json s = {{"name", n.name}, {"role", to_string(n.role)}};
    if (n.plane) s["plane"] = n.plane;
    if (n.pod) s["pod"] = n.pod;
    if (n.sid) s["sid"] = net::to_string(*n.sid);
    if (n.usid) s["usid"] = net::to_string(*n.usid);
    switches.push_back(std::move(s));
  }
  Json hosts = Json::array();
  for (NodeId h : t.hosts()) {
    const Node& n = t.node(h);
    const Gateway& g = n.gateway;
    Json gw = {{"source-address", net::to_string(g.source)},
               {"locator", net::to_string(g.locator) + "/" + std::to_string(g.locator_len)},
               {"decap-sid", net::to_string(g.decap_sid)}};
    if (g.decap_behavior != srv6::LocalSidBehavior::end_dt46)
      gw["decap-behavior"] = config::yang_name(g.decap_behavior);
    if (g.usid) gw["usid"] = net::to_string(*g.usid);
    if (g.probe_sid) gw["probe-sid"] = net::to_string(*g.probe_sid);
    if (!g.agent.empty()) gw["agent"] = g.agent;
    hosts.push_back(
        {{"name", n.name}, {"address", net::to_string(n.address)}, {"gateway", std::move(gw)}});
  }
  Json links = Json::array();
  for (const Link& l : t.links()) {
    Json j = {{"a", t.node(l.a).name}, {"b", t.node(l.b).name}};
    if (l.members != 1) j["members"] = l.members;
    j["member-gbps"] = gbps_text(l.member_mbps);  // decimal64: a string in RFC 7951 JSON
    if (l.state != LinkState::up) j["state"] = to_string(l.state);
    if (l.members_up != l.members) j["members-up"] = l.members_up;
    if (l.capacity_override_mbps) j["capacity-gbps"] = gbps_text(*l.capacity_override_mbps);
    links.push_back(std::move(j));
  }
  // One switch, host or link per line: a generated fabric of hundreds of links reads and
  // diffs as a list (dump(2) would spread each over five to ten lines).
  const Json usid_format = {{"block-bits", unsigned(t.usid_format.block_bits)},
                            {"usid-bits", unsigned(t.usid_format.usid_bits)}};
  std::string o = cat("{\n  \"srv6gw-topology:topology\": {\n    \"name\": ", Json(t.name).dump(),
                      ",\n    \"usid-format\": ", usid_format.dump(), ",\n");
  auto list = [&o](const char* container, const char* entry, const Json& items, bool last) {
    o += cat("    \"", container, "\": {\"", entry, "\": [");
    for (size_t i = 0; i < items.size(); ++i) o += (i ? ",\n      " : "\n      ") + items[i].dump();
    o += last ? "\n    ]}\n" : "\n    ]},\n";
  };
  list("switches", "switch", switches, false);
  list("hosts", "host", hosts, false);
  list("links", "link", links, true);
  return o + "  }\n}\n";
}

}  // namespace srv6gw::pathalg
