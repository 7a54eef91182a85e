// SPDX-License-Identifier: BSD-3-Clause
// libyang front end of the configuration: JSON text -> libyang data tree (types, structure,
// leafrefs, must) -> GatewayConfig -> validate(). The way back (to_json) is json_output.cpp.
#include "config/loader.hpp"

#include <libyang/libyang.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <system_error>
#include <type_traits>
#include <vector>

#include "config/validate.hpp"
#include "config/yang_util.hpp"

#ifndef SRV6GW_YANG_DIR
#define SRV6GW_YANG_DIR ""
#endif

namespace srv6gw::config {
namespace {

using yang::as_uint;
using yang::CtxPtr;
using yang::fail;
using yang::for_children;
using yang::libyang_error;
using yang::name_of;
using yang::ScopedLyLogCapture;
using yang::TreePtr;
using yang::value_of;

constexpr const char* kModule = "srv6gw";
constexpr const char* kModuleFile = "srv6gw.yang";

bool has_module(const std::string& dir) {
  if (dir.empty()) return false;
  return ::access((dir + "/" + kModuleFile).c_str(), R_OK) == 0;
}

std::string executable_dir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return {};
  std::string exe(buf, size_t(n));
  const auto slash = exe.rfind('/');
  return slash == std::string::npos ? std::string() : exe.substr(0, slash);
}

// libyang's JSON parser reads the first top-level value and ignores what follows, and takes
// a document cut short after its first member name as empty. Check the outline (brackets
// balanced, nothing after the document) so that a truncated or concatenated file is refused
// with its line instead of half-loaded.
std::optional<ConfigError> check_json_outline(std::string_view text) {
  size_t line = 1;
  std::vector<std::pair<char, size_t>> open;  // expected closing bracket, line it opened on
  bool started = false, finished = false;
  auto at = [&](size_t l) { return " (line " + std::to_string(l) + ")"; };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') continue;
    if (finished) return ConfigError{"", "unexpected text after the JSON document" + at(line)};
    if (!started) {
      if (c != '{') return std::nullopt;  // not an object: libyang says what is wrong
      started = true;
    }
    if (c == '"') {
      const size_t opened = line;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
        if (i < text.size() && text[i] == '\n') ++line;
      }
      if (i >= text.size()) return ConfigError{"", "unterminated JSON string" + at(opened)};
    } else if (c == '{' || c == '[') {
      open.emplace_back(c == '{' ? '}' : ']', line);
    } else if (c == '}' || c == ']') {
      if (open.empty() || open.back().first != c) {
        return ConfigError{"", std::string("unbalanced '") + c + "' in JSON" + at(line)};
      }
      open.pop_back();
      if (open.empty()) finished = true;
    }
  }
  if (!started) return ConfigError{"", "the configuration is empty"};
  if (!open.empty()) {
    return ConfigError{"", std::string("JSON ends before the '") + open.back().first +
                               "' closing the bracket of line " +
                               std::to_string(open.back().second)};
  }
  return std::nullopt;
}

std::variant<CtxPtr, ConfigError> make_context() {
  const std::string dir = find_yang_dir();
  if (dir.empty()) {
    if (const char* env = std::getenv("SRV6GW_YANG_DIR"); env && *env) {
      return ConfigError{"", std::string("SRV6GW_YANG_DIR=") + env + " holds no " + kModuleFile};
    }
    return ConfigError{"", std::string("YANG module ") + kModuleFile +
                               " not found (set SRV6GW_YANG_DIR to the folder holding it)"};
  }
  return yang::make_context(dir, kModule);
}

// ---------------------------------------------------------------------------------------
// Data tree -> GatewayConfig. libyang has checked every type, range and pattern already, so
// a conversion failure here means the schema and this mapping disagree: it is reported
// with the node's path rather than trusted.

bool as_bool(const lyd_node* n) {
  const std::string_view v = value_of(n);
  if (v == "true") return true;
  if (v == "false") return false;
  fail(n, "expected true or false, got '" + std::string(v) + "'");
}

net::Ipv6Addr as_ipv6(const lyd_node* n) {
  auto a = net::parse_ipv6(value_of(n));
  if (!a) fail(n, "expected an IPv6 address, got '" + std::string(value_of(n)) + "'");
  return *a;
}

net::IpAddr as_ip(const lyd_node* n) {
  auto a = net::parse_ip(value_of(n));
  if (!a) fail(n, "expected an IP address, got '" + std::string(value_of(n)) + "'");
  return *a;
}

net::MacAddr as_mac(const lyd_node* n) {
  auto a = net::parse_mac(value_of(n));
  if (!a) fail(n, "expected a MAC address, got '" + std::string(value_of(n)) + "'");
  return *a;
}

MissAction as_miss_action(const lyd_node* n) {
  auto a = parse_miss_action(value_of(n));
  if (!a) fail(n, "unknown action '" + std::string(value_of(n)) + "'");
  return *a;
}

void map_lossless(const lyd_node* node, LosslessConfig& out) {
  std::vector<uint8_t> pfc;  // given: replaces the default
  for_children(node, [&](const lyd_node* c, std::string_view name) {
    if (name == "enabled") {
      out.enabled = as_bool(c);
    } else if (name == "backlog-frames") {
      out.backlog_frames = as_uint<uint16_t>(c);
    } else if (name == "ecn-threshold-frames") {
      out.ecn_threshold_frames = as_uint<uint16_t>(c);
    } else if (name == "storm-bound-ms") {
      out.storm_bound_ms = as_uint<uint32_t>(c);
    } else if (name == "pfc-priorities") {
      pfc.push_back(as_uint<uint8_t>(c));
    } else {
      fail(c, "unexpected node");
    }
  });
  if (!pfc.empty()) out.pfc_priorities = std::move(pfc);
}

void map_fabric_vlan(const lyd_node* node, FabricVlan& out) {
  out.enabled = true;
  for_children(node, [&](const lyd_node* c, std::string_view name) {
    if (name == "id") {
      out.id = as_uint<uint16_t>(c);
    } else if (name == "dscp-pcp") {
      DscpPcp e;
      for_children(c, [&](const lyd_node* f, std::string_view field) {
        if (field == "dscp") {
          e.dscp = as_uint<uint8_t>(f);
        } else if (field == "pcp") {
          e.pcp = as_uint<uint8_t>(f);
        } else {
          fail(f, "unexpected node");
        }
      });
      out.dscp_pcp.push_back(e);
    } else if (name == "host") {
      auto m = parse_host_vlan_mode(value_of(c));
      if (!m) fail(c, "unknown mode '" + std::string(value_of(c)) + "'");
      out.host = *m;
    } else {
      fail(c, "unexpected node");
    }
  });
}

void map_ports(const lyd_node* ports, GatewayConfig& cfg) {
  for_children(ports, [&](const lyd_node* c, std::string_view name) {
    if (name == "host") {
      cfg.host_port.device = std::string(value_of(c));
    } else if (name == "fabric") {
      cfg.fabric_port.device = std::string(value_of(c));
    } else if (name == "queues") {
      cfg.queues = as_uint<uint16_t>(c);
    } else if (name == "mbufs") {
      cfg.mbufs = as_uint<uint32_t>(c);
    } else if (name == "transparent-mac") {
      cfg.transparent_mac = as_bool(c);
    } else if (name == "fabric-nexthop-mac") {
      cfg.fabric_nexthop_mac = as_mac(c);
    } else if (name == "host-mac") {
      cfg.host_mac = as_mac(c);
    } else if (name == "lossless") {
      map_lossless(c, cfg.host_port.lossless);
      cfg.fabric_port.lossless = cfg.host_port.lossless;
    } else if (name == "host-mtu") {
      cfg.host_port.mtu = as_uint<uint16_t>(c);
    } else if (name == "fabric-mtu") {
      cfg.fabric_port.mtu = as_uint<uint16_t>(c);
    } else if (name == "fabric-vlan") {
      map_fabric_vlan(c, cfg.fabric_port.vlan);
    } else {
      fail(c, "unexpected node");
    }
  });
}

void map_actions(const lyd_node* actions, GatewayConfig& cfg) {
  for_children(actions, [&](const lyd_node* c, std::string_view name) {
    if (name == "steering-miss") {
      cfg.steering_miss = as_miss_action(c);
    } else if (name == "non-roce") {
      cfg.non_roce = as_miss_action(c);
    } else if (name == "fabric-non-sid") {
      cfg.fabric_non_sid = as_miss_action(c);
    } else {
      fail(c, "unexpected node");
    }
  });
}

double as_decimal(const lyd_node* n) {
  const std::string v(value_of(n));
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size())
    fail(n, "expected a decimal number, got '" + v + "'");
  return x;
}

void map_engine(const lyd_node* node, engine::Params& out) {
  for_children(node, [&](const lyd_node* c, std::string_view name) {
    if (name == "enabled") {
      out.enabled = as_bool(c);
    } else if (name == "interval-us") {
      out.interval_us = as_uint<uint32_t>(c);
    } else if (name == "alpha") {
      out.alpha = as_decimal(c);
    } else if (name == "decrease") {
      out.decrease = as_decimal(c);
    } else if (name == "min-factor") {
      out.min_factor = as_decimal(c);
    } else if (name == "decrease-gap-us") {
      out.decrease_gap_us = as_uint<uint32_t>(c);
    } else if (name == "exclude-threshold") {
      out.exclude_threshold = as_decimal(c);
    } else if (name == "readmit-threshold") {
      out.readmit_threshold = as_decimal(c);
    } else if (name == "readmit-factor") {
      out.readmit_factor = as_decimal(c);
    } else if (name == "hold-down-us") {
      out.hold_down_us = as_uint<uint32_t>(c);
    } else if (name == "max-hold-down-us") {
      out.max_hold_down_us = as_uint<uint32_t>(c);
    } else if (name == "recovery-step") {
      out.recovery_step = as_decimal(c);
    } else if (name == "recovery-period-us") {
      out.recovery_period_us = as_uint<uint32_t>(c);
    } else if (name == "reflect") {
      out.reflect = as_bool(c);
    } else if (name == "path-id-in-source") {
      out.path_id_in_source = as_bool(c);
    } else if (name == "source-entropy-bits") {
      out.source_entropy_bits = as_uint<uint8_t>(c);
    } else {
      fail(c, "unexpected node");
    }
  });
}

void map_probe(const lyd_node* node, engine::ProbeParams& out) {
  for_children(node, [&](const lyd_node* c, std::string_view name) {
    if (name == "enabled") {
      out.enabled = as_bool(c);
    } else if (name == "interval-us") {
      out.interval_us = as_uint<uint32_t>(c);
    } else if (name == "timeout-us") {
      out.timeout_us = as_uint<uint32_t>(c);
    } else if (name == "loss-threshold") {
      out.loss_threshold = as_uint<uint32_t>(c);
    } else if (name == "hold-down-us") {
      out.hold_down_us = as_uint<uint32_t>(c);
    } else {
      fail(c, "unexpected node");
    }
  });
}

void map_capacities(const lyd_node* caps, Capacities& out) {
  for_children(caps, [&](const lyd_node* c, std::string_view name) {
    if (name == "exact-entries") {
      out.exact_entries = as_uint<uint32_t>(c);
    } else if (name == "lpm4-rules") {
      out.lpm4_rules = as_uint<uint32_t>(c);
    } else if (name == "lpm6-rules") {
      out.lpm6_rules = as_uint<uint32_t>(c);
    } else if (name == "qp-ranges") {
      out.qp_ranges = as_uint<uint32_t>(c);
    } else if (name == "policies") {
      out.policies = as_uint<uint32_t>(c);
    } else if (name == "local-sids") {
      out.local_sids = as_uint<uint32_t>(c);
    } else if (name == "max-sids") {
      out.max_sids = as_uint<uint8_t>(c);
    } else {
      fail(c, "unexpected node");
    }
  });
}

srv6::EncapMode as_encap(const lyd_node* n) {
  auto m = parse_encap_mode(value_of(n));
  if (!m) fail(n, "unknown encap '" + std::string(value_of(n)) + "'");
  return *m;
}

SegmentList map_segment_list(const lyd_node* n) {
  SegmentList sl;
  for_children(n, [&](const lyd_node* c, std::string_view name) {
    if (name == "name") {
      sl.name = std::string(value_of(c));
    } else if (name == "path-id") {
      sl.path_id = as_uint<uint16_t>(c);
    } else if (name == "weight") {
      sl.weight = as_uint<uint32_t>(c);
    } else if (name == "backup") {
      sl.backup = as_bool(c);
    } else if (name == "load-group") {
      sl.load_group = std::string(value_of(c));
    } else if (name == "sid") {
      sl.sids.push_back(as_ipv6(c));  // ordered-by user: document order is path order
    } else {
      fail(c, "unexpected node");
    }
  });
  return sl;
}

Policy map_policy(const lyd_node* n) {
  Policy p;
  for_children(n, [&](const lyd_node* c, std::string_view name) {
    if (name == "name") {
      p.name = std::string(value_of(c));
    } else if (name == "color") {
      p.color = as_uint<uint32_t>(c);
    } else if (name == "endpoint") {
      p.endpoint = as_ip(c);
    } else if (name == "source-address") {
      p.source = as_ipv6(c);
    } else if (name == "probe-sid") {
      p.probe_sid = as_ipv6(c);
    } else if (name == "probe-dscp") {
      p.probe_dscp = as_uint<uint8_t>(c);
    } else if (name == "rails") {
      p.rails.push_back(std::string(value_of(c)));
    } else if (name == "encap") {
      p.encap = as_encap(c);
    } else if (name == "usid-format") {
      for_children(c, [&](const lyd_node* f, std::string_view fname) {
        if (fname == "block-bits") {
          p.usid.block_bits = as_uint<uint8_t>(f);
        } else if (fname == "usid-bits") {
          p.usid.usid_bits = as_uint<uint8_t>(f);
        } else {
          fail(f, "unexpected node");
        }
      });
    } else if (name == "selection") {
      for_children(c, [&](const lyd_node* s, std::string_view sname) {
        if (sname == "mode") {
          auto m = parse_selection_mode(value_of(s));
          if (!m) fail(s, "unknown selection mode '" + std::string(value_of(s)) + "'");
          p.selection = *m;
        } else if (sname == "flowlet-gap-us") {
          p.flowlet_gap_us = as_uint<uint32_t>(s);
        } else if (sname == "idle-gap-us") {
          p.idle_gap_us = as_uint<uint32_t>(s);
        } else if (sname == "spray-opcodes") {
          p.spray_opcodes.push_back(as_uint<uint8_t>(s));
        } else {
          fail(s, "unexpected node");
        }
      });
    } else if (name == "segment-list") {
      p.segment_lists.push_back(map_segment_list(c));
    } else {
      fail(c, "unexpected node");
    }
  });
  return p;
}

// "10.0.1.0/24" (canonical form from libyang) -> address + length.
void map_prefix(const lyd_node* n, SteeringRule& r) {
  const std::string_view v = value_of(n);
  const auto slash = v.find('/');
  if (slash == std::string_view::npos) fail(n, "prefix without a length");
  auto addr = net::parse_ip(v.substr(0, slash));
  if (!addr) fail(n, "bad prefix address in '" + std::string(v) + "'");
  const std::string_view len = v.substr(slash + 1);
  unsigned bits = 0;
  auto [end, ec] = std::from_chars(len.data(), len.data() + len.size(), bits);
  if (ec != std::errc() || end != len.data() + len.size() || bits > 128) {
    fail(n, "bad prefix length in '" + std::string(v) + "'");
  }
  r.dst = *addr;
  r.prefix_len = uint8_t(bits);
}

SteeringRule map_rule(const lyd_node* n) {
  SteeringRule r;
  bool matched = false;
  for_children(n, [&](const lyd_node* c, std::string_view name) {
    if (name == "id") {
      r.id = as_uint<uint32_t>(c);
    } else if (name == "exact") {
      r.kind = SteeringKind::exact;
      matched = true;
      for_children(c, [&](const lyd_node* e, std::string_view ename) {
        if (ename == "destination") {
          r.dst = as_ip(e);
        } else if (ename == "dest-qp") {
          r.dest_qp = as_uint<uint32_t>(e);
        } else {
          fail(e, "unexpected node");
        }
      });
    } else if (name == "destination") {
      r.kind = SteeringKind::dst_any_qp;
      matched = true;
      r.dst = as_ip(c);
    } else if (name == "qp-range") {
      r.kind = SteeringKind::qp_range;
      matched = true;
      for_children(c, [&](const lyd_node* q, std::string_view qname) {
        if (qname == "qp-low") {
          r.qp_low = as_uint<uint32_t>(q);
        } else if (qname == "qp-high") {
          r.qp_high = as_uint<uint32_t>(q);
        } else if (qname == "destination") {
          r.dst = as_ip(q);
          r.has_dst = true;
        } else {
          fail(q, "unexpected node");
        }
      });
    } else if (name == "prefix") {
      r.kind = SteeringKind::prefix;
      matched = true;
      map_prefix(c, r);
    } else if (name == "dscp") {
      r.dscp = as_uint<uint8_t>(c);
    } else if (name == "policy") {
      r.policy = std::string(value_of(c));
    } else {
      fail(c, "unexpected node");
    }
  });
  if (!matched) fail(n, "rule has no match");
  return r;
}

LocalSid map_local_sid(const lyd_node* n) {
  LocalSid ls;
  for_children(n, [&](const lyd_node* c, std::string_view name) {
    if (name == "sid") {
      ls.sid = as_ipv6(c);
    } else if (name == "behavior") {
      auto b = parse_local_sid_behavior(value_of(c));
      if (!b) fail(c, "unknown behavior '" + std::string(value_of(c)) + "'");
      ls.behavior = *b;
    } else {
      fail(c, "unexpected node");
    }
  });
  return ls;
}

// Which of a rail's port settings its entry gives; the others come from ports/.
struct RailOwnSettings {
  bool host_mtu = false;
  bool fabric_mtu = false;
  bool fabric_vlan = false;
};

Rail map_rail(const lyd_node* n, RailOwnSettings& own) {
  Rail r;
  for_children(n, [&](const lyd_node* c, std::string_view name) {
    if (name == "name") {
      r.name = std::string(value_of(c));
    } else if (name == "host") {
      r.host_port.device = std::string(value_of(c));
    } else if (name == "fabric") {
      r.fabric_port.device = std::string(value_of(c));
    } else if (name == "queues") {
      r.queues = as_uint<uint16_t>(c);
    } else if (name == "source-address") {
      r.source = as_ipv6(c);
    } else if (name == "fabric-nexthop-mac") {
      r.fabric_nexthop_mac = as_mac(c);
    } else if (name == "host-mac") {
      r.host_mac = as_mac(c);
    } else if (name == "host-mtu") {
      r.host_port.mtu = as_uint<uint16_t>(c);
      own.host_mtu = true;
    } else if (name == "fabric-mtu") {
      r.fabric_port.mtu = as_uint<uint16_t>(c);
      own.fabric_mtu = true;
    } else if (name == "fabric-vlan") {
      map_fabric_vlan(c, r.fabric_port.vlan);
      own.fabric_vlan = true;
    } else if (name == "local-sids") {
      for_children(c, [&](const lyd_node* l, std::string_view) {
        r.local_sids.push_back(map_local_sid(l));
      });
    } else {
      fail(c, "unexpected node");
    }
  });
  return r;
}

// The one ports/lossless applies to every rail's ports as to the single pair's; ports/
// host-mtu, fabric-mtu and fabric-vlan are the defaults of the rails that do not give theirs.
void inherit_port_settings(const GatewaySettings& cfg, const RailOwnSettings& own, Rail& r) {
  r.host_port.lossless = cfg.host_port.lossless;
  r.fabric_port.lossless = cfg.fabric_port.lossless;
  if (!own.host_mtu) r.host_port.mtu = cfg.host_port.mtu;
  if (!own.fabric_mtu) r.fabric_port.mtu = cfg.fabric_port.mtu;
  if (!own.fabric_vlan) r.fabric_port.vlan = cfg.fabric_port.vlan;
}

GatewayConfig map_gateway(const lyd_node* gw) {
  GatewayConfig cfg;
  std::vector<RailOwnSettings> rails_own;  // one per cfg.rails entry
  for_children(gw, [&](const lyd_node* c, std::string_view name) {
    if (name == "ports") {
      map_ports(c, cfg);
    } else if (name == "source-address") {
      cfg.source = as_ipv6(c);
    } else if (name == "hop-limit") {
      cfg.hop_limit = as_uint<uint8_t>(c);
    } else if (name == "actions") {
      map_actions(c, cfg);
    } else if (name == "stats-interval-ms") {
      cfg.stats_interval_ms = as_uint<uint32_t>(c);
    } else if (name == "capacities") {
      map_capacities(c, cfg.capacities);
    } else if (name == "engine") {
      map_engine(c, cfg.engine);
    } else if (name == "probe") {
      map_probe(c, cfg.probe);
    } else if (name == "policies") {
      for_children(
          c, [&](const lyd_node* p, std::string_view) { cfg.policies.push_back(map_policy(p)); });
    } else if (name == "steering") {
      for_children(
          c, [&](const lyd_node* r, std::string_view) { cfg.steering.push_back(map_rule(r)); });
    } else if (name == "local-sids") {
      for_children(c, [&](const lyd_node* l, std::string_view) {
        cfg.local_sids.push_back(map_local_sid(l));
      });
    } else if (name == "rails") {
      for_children(c, [&](const lyd_node* r, std::string_view) {
        cfg.rails.push_back(map_rail(r, rails_own.emplace_back()));
      });
    } else {
      fail(c, "unexpected node");
    }
  });
  // After the whole tree: ports may come after rails in the document.
  for (size_t i = 0; i < cfg.rails.size(); ++i)
    inherit_port_settings(cfg, rails_own[i], cfg.rails[i]);
  return cfg;
}

}  // namespace

std::string find_yang_dir() {
  if (const char* env = std::getenv("SRV6GW_YANG_DIR"); env && *env) {
    // An explicit setting wins even when wrong: silently using another copy would hide it.
    return has_module(env) ? std::string(env) : std::string();
  }
  if (const std::string exe = executable_dir(); !exe.empty()) {
    const std::string installed = exe + "/../share/srv6gw/yang";
    if (has_module(installed)) return installed;
  }
  if (has_module(SRV6GW_YANG_DIR)) return SRV6GW_YANG_DIR;
  return {};
}

LoadResult load_config_json(std::string_view json) {
  if (auto e = check_json_outline(json)) return *e;
  ScopedLyLogCapture capture;
  auto made = make_context();
  if (auto* e = std::get_if<ConfigError>(&made)) return *e;
  CtxPtr ctx = std::move(std::get<CtxPtr>(made));

  const std::string text(json);  // libyang wants NUL-terminated input
  lyd_node* raw = nullptr;
  const LY_ERR rc = lyd_parse_data_mem(ctx.get(), text.c_str(), LYD_JSON, LYD_PARSE_STRICT,
                                       LYD_VALIDATE_PRESENT, &raw);
  TreePtr tree(raw);
  if (rc != LY_SUCCESS) return libyang_error(ctx.get(), "invalid configuration");

  const lyd_node* gateway = yang::find_top(tree.get(), kModule, "gateway");
  if (!gateway) return ConfigError{"/srv6gw:gateway", "the configuration has no gateway"};

  GatewayConfig cfg;
  try {
    cfg = map_gateway(gateway);
  } catch (const yang::NodeError& e) {
    return e.error;
  }
  if (auto e = validate(cfg)) return *e;
  return cfg;
}

LoadResult load_config_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return ConfigError{"", "cannot open " + path + ": " + std::strerror(errno)};
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return ConfigError{"", "cannot read " + path};
  return load_config_json(text.str());
}

}  // namespace srv6gw::config
