// SPDX-License-Identifier: BSD-3-Clause
// Semantic validation of a GatewayConfig. The YANG module checks types and structure of
// files; this checks the same constraints again (the gRPC agent builds configurations
// without libyang) plus those YANG cannot express cheaply: path ids unique across the whole
// gateway, uSID SIDs inside the first SID's block, local SIDs distinct from policy SIDs,
// capacity limits. Errors name the node by its YANG instance path.
#include "config/model.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>

namespace srv6gw::config {

const char* to_string(SelectionMode m) {
  switch (m) {
    case SelectionMode::flow:
      return "flow";
    case SelectionMode::packet:
      return "packet";
    case SelectionMode::flowlet:
      return "flowlet";
    case SelectionMode::selective:
      return "selective";
    case SelectionMode::adaptive:
      return "adaptive";
  }
  return "unknown";
}

std::optional<SelectionMode> parse_selection_mode(std::string_view name) {
  for (auto m : {SelectionMode::flow, SelectionMode::packet, SelectionMode::flowlet,
                 SelectionMode::selective, SelectionMode::adaptive}) {
    if (name == to_string(m)) return m;
  }
  return std::nullopt;
}

const char* to_string(MissAction a) {
  switch (a) {
    case MissAction::pass:
      return "pass";
    case MissAction::drop:
      return "drop";
  }
  return "unknown";
}

std::optional<MissAction> parse_miss_action(std::string_view name) {
  for (auto a : {MissAction::pass, MissAction::drop}) {
    if (name == to_string(a)) return a;
  }
  return std::nullopt;
}

const char* to_string(SteeringKind k) {
  switch (k) {
    case SteeringKind::exact:
      return "exact";
    case SteeringKind::dst_any_qp:
      return "dst-any-qp";
    case SteeringKind::qp_range:
      return "qp-range";
    case SteeringKind::prefix:
      return "prefix";
  }
  return "unknown";
}

std::optional<SteeringKind> parse_steering_kind(std::string_view name) {
  for (auto k : {SteeringKind::exact, SteeringKind::dst_any_qp, SteeringKind::qp_range,
                 SteeringKind::prefix}) {
    if (name == to_string(k)) return k;
  }
  return std::nullopt;
}

bool operator==(const Policy& a, const Policy& b) {
  return a.name == b.name && a.color == b.color && a.endpoint == b.endpoint &&
         a.source == b.source && a.encap == b.encap && a.usid.block_bits == b.usid.block_bits &&
         a.usid.usid_bits == b.usid.usid_bits && a.selection == b.selection &&
         a.flowlet_gap_us == b.flowlet_gap_us && a.spray_opcodes == b.spray_opcodes &&
         a.segment_lists == b.segment_lists && a.probe_sid == b.probe_sid;
}

namespace {

constexpr const char* kRoot = "/srv6gw:gateway";

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
  return std::string(kRoot) + "/policies/policy[name=" + quoted(policy) + "]";
}

std::string segment_list_path(std::string_view policy, std::string_view segment_list) {
  return policy_path(policy) + "/segment-list[name=" + quoted(segment_list) + "]";
}

std::string rule_path(const SteeringRule& rule, size_t index) {
  if (rule.id != 0) {
    return std::string(kRoot) + "/steering/rule[id='" + std::to_string(rule.id) + "']";
  }
  return std::string(kRoot) + "/steering/rule[" + std::to_string(index + 1) + "]";
}

std::string local_sid_path(const net::Ipv6Addr& sid) {
  return std::string(kRoot) + "/local-sids/local-sid[sid=" + quoted(net::to_string(sid)) + "]";
}

namespace {

std::string sid_entry_path(const std::string& list_path, const net::Ipv6Addr& sid) {
  return list_path + "/sid[.=" + quoted(net::to_string(sid)) + "]";
}

// Same rule as the YANG typedef object-name: 1..64 of [A-Za-z0-9._:-], alphanumeric first.
std::optional<std::string> bad_name(std::string_view name) {
  if (name.empty()) return "must not be empty";
  if (name.size() > 64) return "is longer than 64 characters";
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (!alnum(name[0])) return "must start with a letter or digit";
  for (char c : name) {
    if (!alnum(c) && c != '.' && c != '_' && c != ':' && c != '-') {
      return "may only hold letters, digits and . _ : -";
    }
  }
  return std::nullopt;
}

// Usable as a source address or a SID: not ::, not ::1, not multicast.
std::optional<std::string> bad_unicast(const net::Ipv6Addr& a) {
  static const net::Ipv6Addr kUnspecified{};
  net::Ipv6Addr loopback{};
  loopback.bytes[15] = 1;
  if (a == kUnspecified) return "must not be the unspecified address ::";
  if (a == loopback) return "must not be the loopback address ::1";
  if (a.bytes[0] == 0xff) return "must not be a multicast address";
  return std::nullopt;
}

unsigned family_bits(net::Family f) {
  return f == net::Family::ipv4 ? 32 : f == net::Family::ipv6 ? 128 : 0;
}

// True when bits beyond `len` (of the family's width) are zero.
bool host_bits_clear(const net::IpAddr& a, unsigned len) {
  const unsigned width = family_bits(a.family);
  for (unsigned bit = len; bit < width; ++bit) {
    if (a.bytes[bit / 8] & (0x80u >> (bit % 8))) return false;
  }
  return true;
}

// Reads `bits` bits of `a` starting at bit `offset` (0 = most significant), bits <= 64.
uint64_t bit_field(const net::Ipv6Addr& a, unsigned offset, unsigned bits) {
  uint64_t v = 0;
  for (unsigned i = 0; i < bits; ++i) {
    const unsigned bit = offset + i;
    v = (v << 1) | ((a.bytes[bit / 8] >> (7 - bit % 8)) & 1u);
  }
  return v;
}

bool bits_equal(const net::Ipv6Addr& a, const net::Ipv6Addr& b, unsigned bits) {
  for (unsigned bit = 0; bit < bits; ++bit) {
    const unsigned mask = 0x80u >> (bit % 8);
    if ((a.bytes[bit / 8] & mask) != (b.bytes[bit / 8] & mask)) return false;
  }
  return true;
}

bool bits_zero_from(const net::Ipv6Addr& a, unsigned from) {
  for (unsigned bit = from; bit < 128; ++bit) {
    if (a.bytes[bit / 8] & (0x80u >> (bit % 8))) return false;
  }
  return true;
}

ConfigError err(std::string path, std::string message) {
  return ConfigError{std::move(path), std::move(message)};
}

std::optional<ConfigError> validate_ports(const GatewayConfig& cfg) {
  const std::string ports = std::string(kRoot) + "/ports";
  if (cfg.host_port.device.empty()) return err(ports + "/host", "host port device is empty");
  if (cfg.fabric_port.device.empty()) {
    return err(ports + "/fabric", "fabric port device is empty");
  }
  if (cfg.host_port.device.size() > 128) {
    return err(ports + "/host", "host port device is longer than 128 characters");
  }
  if (cfg.fabric_port.device.size() > 128) {
    return err(ports + "/fabric", "fabric port device is longer than 128 characters");
  }
  if (cfg.fabric_port.device == cfg.host_port.device) {
    return err(ports + "/fabric", "the fabric port must differ from the host port");
  }
  if (cfg.queues < 1 || cfg.queues > kMaxQueues) {
    return err(ports + "/queues", "queues must be 1.." + std::to_string(kMaxQueues) + ", not " +
                                      std::to_string(cfg.queues));
  }
  if (cfg.mbufs == 0) return err(ports + "/mbufs", "mbufs must be at least 1");
  return std::nullopt;
}

std::optional<ConfigError> validate_capacities(const Capacities& c) {
  const std::string base = std::string(kRoot) + "/capacities/";
  const std::tuple<const char*, uint32_t, uint32_t> limits[] = {
      {"exact-entries", c.exact_entries, 1u << 24}, {"lpm4-rules", c.lpm4_rules, 1u << 24},
      {"lpm6-rules", c.lpm6_rules, 1u << 24},       {"qp-ranges", c.qp_ranges, 1u << 20},
      {"policies", c.policies, 1u << 16},           {"local-sids", c.local_sids, 1u << 16},
      {"max-sids", c.max_sids, srv6::kMaxSids},
  };
  for (const auto& [name, value, max] : limits) {
    if (value < 1 || value > max) {
      return err(base + name, std::string(name) + " must be 1.." + std::to_string(max) + ", not " +
                                  std::to_string(value));
    }
  }
  return std::nullopt;
}

// Where a path id or a SID was first seen, for "already used by" messages.
struct Owner {
  std::string policy;
  std::string segment_list;
};

std::string describe(const Owner& o) {
  return "policy '" + o.policy + "' segment-list '" + o.segment_list + "'";
}

std::optional<ConfigError> validate_usid_list(const Policy& p, const SegmentList& sl,
                                              const std::string& sl_path) {
  const unsigned block = p.usid.block_bits;
  const unsigned usid = p.usid.usid_bits;
  const net::Ipv6Addr& first = sl.sids.front();
  for (const auto& sid : sl.sids) {
    if (!bits_equal(sid, first, block)) {
      return err(sid_entry_path(sl_path, sid),
                 "SID " + net::to_string(sid) + " is outside the " + std::to_string(block) +
                     "-bit locator block of the first SID " + net::to_string(first));
    }
    if (!bits_zero_from(sid, block + usid)) {
      return err(sid_entry_path(sl_path, sid),
                 "SID " + net::to_string(sid) + " is not a micro-SID: bits after the " +
                     std::to_string(block) + "-bit block and " + std::to_string(usid) +
                     "-bit micro-SID must be zero");
    }
    if (bit_field(sid, block, usid) == 0) {
      return err(sid_entry_path(sl_path, sid), "SID " + net::to_string(sid) +
                                                   " has an all-zero micro-SID (the end-of-"
                                                   "container marker)");
    }
  }
  return std::nullopt;
}

std::optional<ConfigError> validate_policies(const GatewayConfig& cfg,
                                             std::map<net::Ipv6Addr, Owner>& policy_sids) {
  std::set<std::string, std::less<>> names;
  std::map<uint16_t, Owner> path_ids;
  if (cfg.policies.size() > cfg.capacities.policies) {
    return err(policy_path(cfg.policies[cfg.capacities.policies].name),
               std::to_string(cfg.policies.size()) + " policies exceed capacities/policies (" +
                   std::to_string(cfg.capacities.policies) + ")");
  }
  for (const Policy& p : cfg.policies) {
    const std::string pp = policy_path(p.name);
    if (auto why = bad_name(p.name)) return err(pp + "/name", "policy name " + *why);
    if (!names.insert(p.name).second) return err(pp, "duplicate policy name '" + p.name + "'");
    if (p.endpoint && p.endpoint->family == net::Family::none) {
      return err(pp + "/endpoint", "endpoint has no address family");
    }
    if (p.source) {
      if (auto why = bad_unicast(*p.source)) {
        return err(pp + "/source-address", "source-address " + *why);
      }
    }
    if (p.encap != srv6::EncapMode::encaps && p.encap != srv6::EncapMode::encaps_red &&
        p.encap != srv6::EncapMode::usid) {
      return err(pp + "/encap", "unknown encap mode " + std::to_string(int(p.encap)));
    }
    if (!parse_selection_mode(to_string(p.selection))) {
      return err(pp + "/selection/mode",
                 "unknown selection mode " + std::to_string(int(p.selection)));
    }
    // Checked in every mode, not only usid: the format is part of the configuration (and
    // of what to_json writes), so a stored format is always one the YANG module accepts.
    {
      const unsigned block = p.usid.block_bits, usid = p.usid.usid_bits;
      if (block < 8 || block % 8 != 0 || block > 120) {
        return err(pp + "/usid-format/block-bits",
                   "block-bits must be a multiple of 8 in 8..120, not " + std::to_string(block));
      }
      if (usid < 8 || usid % 8 != 0 || usid > 120) {
        return err(pp + "/usid-format/usid-bits",
                   "usid-bits must be a multiple of 8 in 8..120, not " + std::to_string(usid));
      }
      if (block + usid > 128) {
        return err(
            pp + "/usid-format/block-bits",
            "block-bits + usid-bits must not exceed 128, not " + std::to_string(block + usid));
      }
    }
    const std::string sel = pp + "/selection";
    if (p.flowlet_gap_us < 1 || p.flowlet_gap_us > kMaxFlowletGapUs) {
      return err(sel + "/flowlet-gap-us", "flowlet-gap-us must be 1.." +
                                              std::to_string(kMaxFlowletGapUs) + ", not " +
                                              std::to_string(p.flowlet_gap_us));
    }
    if (p.selection == SelectionMode::selective && p.spray_opcodes.empty()) {
      return err(sel + "/mode", "selective mode needs at least one spray-opcodes entry");
    }
    {
      std::set<uint8_t> seen;
      for (uint8_t op : p.spray_opcodes) {
        if (!seen.insert(op).second) {
          return err(sel + "/spray-opcodes[.='" + std::to_string(op) + "']",
                     "duplicate spray opcode " + std::to_string(op));
        }
      }
    }
    if (p.segment_lists.empty()) {
      return err(pp + "/segment-list", "a policy needs at least one segment list");
    }
    if (p.segment_lists.size() > kMaxSegmentListsPerPolicy) {
      return err(
          segment_list_path(p.name, p.segment_lists[kMaxSegmentListsPerPolicy].name),
          "a policy has at most " + std::to_string(kMaxSegmentListsPerPolicy) + " segment lists");
    }
    std::set<std::string, std::less<>> list_names;
    bool has_active = false;
    for (const SegmentList& sl : p.segment_lists) {
      const std::string sp = segment_list_path(p.name, sl.name);
      if (auto why = bad_name(sl.name)) return err(sp + "/name", "segment list name " + *why);
      if (!list_names.insert(sl.name).second) {
        return err(sp, "duplicate segment list name '" + sl.name + "' in policy '" + p.name + "'");
      }
      if (sl.path_id > kMaxPathId) {
        return err(sp + "/path-id", "path-id must be 0.." + std::to_string(kMaxPathId) + ", not " +
                                        std::to_string(sl.path_id) +
                                        " (the SRH Tag's top bit marks a reflected path id)");
      }
      if (auto [it, fresh] = path_ids.emplace(sl.path_id, Owner{p.name, sl.name}); !fresh) {
        return err(sp + "/path-id", "path-id " + std::to_string(sl.path_id) +
                                        " is already used by " + describe(it->second) +
                                        " (path ids are unique across the gateway)");
      }
      if (sl.weight > kMaxWeight) {
        return err(sp + "/weight", "weight must be 0.." + std::to_string(kMaxWeight) + ", not " +
                                       std::to_string(sl.weight));
      }
      if (!sl.backup && sl.weight > 0) has_active = true;
      if (sl.sids.empty()) return err(sp + "/sid", "a segment list needs at least one SID");
      const unsigned max_sids = std::min<unsigned>(cfg.capacities.max_sids, srv6::kMaxSids);
      if (sl.sids.size() > max_sids) {
        return err(sp + "/sid", std::to_string(sl.sids.size()) + " SIDs exceed the maximum of " +
                                    std::to_string(max_sids) + " (capacities/max-sids)");
      }
      std::set<net::Ipv6Addr> in_list;
      for (const auto& sid : sl.sids) {
        if (auto why = bad_unicast(sid)) return err(sid_entry_path(sp, sid), "SID " + *why);
        if (!in_list.insert(sid).second) {
          return err(sid_entry_path(sp, sid),
                     "SID " + net::to_string(sid) + " appears twice in the segment list");
        }
        policy_sids.emplace(sid, Owner{p.name, sl.name});
      }
      if (p.encap == srv6::EncapMode::usid) {
        if (auto e = validate_usid_list(p, sl, sp)) return e;
      }
      // The data plane builds exactly this template when it compiles the policy: refuse
      // here anything it would fail on, so that a validated configuration always applies.
      srv6::TemplateSpec spec;
      spec.source = p.source.value_or(cfg.source);
      spec.sids = std::span<const net::Ipv6Addr>(sl.sids.data(), sl.sids.size());
      spec.mode = p.encap;
      spec.usid = p.usid;
      spec.tag = sl.path_id;
      spec.hop_limit = cfg.hop_limit;
      srv6::EncapTemplate tmpl;
      if (auto st = srv6::build_template(spec, tmpl); st != srv6::BuildStatus::ok) {
        return err(sp + "/sid",
                   std::string("cannot build the encapsulation: ") + srv6::to_string(st));
      }
    }
    if (!has_active) {
      return err(pp, "a policy needs a non-backup segment list with weight > 0");
    }
  }
  return std::nullopt;
}

// Everything a rule matches on; two rules with the same key are duplicates.
using MatchKey = std::tuple<SteeringKind, net::Family, std::array<uint8_t, 16>, uint8_t, uint32_t,
                            uint32_t, uint32_t, bool, int>;

MatchKey match_key(const SteeringRule& r) {
  const int dscp = r.dscp ? int(*r.dscp) : -1;
  switch (r.kind) {
    case SteeringKind::exact:
      return {r.kind, r.dst.family, r.dst.bytes, 0, r.dest_qp, 0, 0, true, dscp};
    case SteeringKind::dst_any_qp:
      return {r.kind, r.dst.family, r.dst.bytes, 0, 0, 0, 0, true, dscp};
    case SteeringKind::qp_range:
      if (r.has_dst) {
        return {r.kind, r.dst.family, r.dst.bytes, 0, 0, r.qp_low, r.qp_high, true, dscp};
      }
      return {r.kind, net::Family::none, {}, 0, 0, r.qp_low, r.qp_high, false, dscp};
    case SteeringKind::prefix:
      return {r.kind, r.dst.family, r.dst.bytes, r.prefix_len, 0, 0, 0, true, dscp};
  }
  return {};
}

std::optional<ConfigError> validate_steering(const GatewayConfig& cfg) {
  std::set<std::string, std::less<>> policies;
  for (const Policy& p : cfg.policies) policies.insert(p.name);

  std::map<uint32_t, size_t> ids;
  std::map<MatchKey, size_t> matches;
  // QP ranges of one scope (destination or none, DSCP) must not overlap: a packet in two
  // ranges would have no single most specific rule. Keyed by scope, then qp_low.
  using Scope = std::tuple<bool, net::Family, std::array<uint8_t, 16>, int>;
  std::map<Scope, std::map<uint32_t, size_t>> ranges;
  uint32_t exact_count = 0, lpm4_count = 0, lpm6_count = 0, range_count = 0;

  for (size_t i = 0; i < cfg.steering.size(); ++i) {
    const SteeringRule& r = cfg.steering[i];
    const std::string rp = rule_path(r, i);
    if (r.id != 0) {
      if (auto [it, fresh] = ids.emplace(r.id, i); !fresh) {
        return err(rp, "duplicate rule id " + std::to_string(r.id));
      }
    }
    switch (r.kind) {
      case SteeringKind::exact:
        if (r.dst.family == net::Family::none) {
          return err(rp + "/exact/destination", "exact rule needs a destination address");
        }
        if (r.dest_qp > kMaxQp) {
          return err(rp + "/exact/dest-qp",
                     "dest-qp " + std::to_string(r.dest_qp) + " does not fit in 24 bits");
        }
        if (++exact_count > cfg.capacities.exact_entries) {
          return err(rp, "exact and destination rules exceed capacities/exact-entries (" +
                             std::to_string(cfg.capacities.exact_entries) + ")");
        }
        break;
      case SteeringKind::dst_any_qp:
        if (r.dst.family == net::Family::none) {
          return err(rp + "/destination", "destination rule needs a destination address");
        }
        if (++exact_count > cfg.capacities.exact_entries) {
          return err(rp, "exact and destination rules exceed capacities/exact-entries (" +
                             std::to_string(cfg.capacities.exact_entries) + ")");
        }
        break;
      case SteeringKind::qp_range: {
        if (r.qp_low > kMaxQp) {
          return err(rp + "/qp-range/qp-low",
                     "qp-low " + std::to_string(r.qp_low) + " does not fit in 24 bits");
        }
        if (r.qp_high > kMaxQp) {
          return err(rp + "/qp-range/qp-high",
                     "qp-high " + std::to_string(r.qp_high) + " does not fit in 24 bits");
        }
        if (r.qp_low > r.qp_high) {
          return err(rp + "/qp-range/qp-high", "qp-high must not be lower than qp-low");
        }
        if (r.has_dst && r.dst.family == net::Family::none) {
          return err(rp + "/qp-range/destination", "destination has no address family");
        }
        if (++range_count > cfg.capacities.qp_ranges) {
          return err(rp, "QP range rules exceed capacities/qp-ranges (" +
                             std::to_string(cfg.capacities.qp_ranges) + ")");
        }
        break;
      }
      case SteeringKind::prefix: {
        const unsigned width = family_bits(r.dst.family);
        if (width == 0) return err(rp + "/prefix", "prefix has no address family");
        if (r.prefix_len > width) {
          return err(rp + "/prefix", "prefix length " + std::to_string(r.prefix_len) + " exceeds " +
                                         std::to_string(width));
        }
        if (!host_bits_clear(r.dst, r.prefix_len)) {
          return err(rp + "/prefix", "prefix " + net::to_string(r.dst) + "/" +
                                         std::to_string(r.prefix_len) +
                                         " has bits set beyond its length");
        }
        const bool v4 = r.dst.family == net::Family::ipv4;
        if (v4 && ++lpm4_count > cfg.capacities.lpm4_rules) {
          return err(rp, "IPv4 prefix rules exceed capacities/lpm4-rules (" +
                             std::to_string(cfg.capacities.lpm4_rules) + ")");
        }
        if (!v4 && ++lpm6_count > cfg.capacities.lpm6_rules) {
          return err(rp, "IPv6 prefix rules exceed capacities/lpm6-rules (" +
                             std::to_string(cfg.capacities.lpm6_rules) + ")");
        }
        break;
      }
      default:
        return err(rp, "unknown rule kind " + std::to_string(int(r.kind)));
    }
    if (r.dscp && *r.dscp > 63) {
      return err(rp + "/dscp", "dscp must be 0..63, not " + std::to_string(*r.dscp));
    }
    if (r.policy.empty()) return err(rp + "/policy", "rule names no policy");
    if (!policies.count(r.policy)) {
      return err(rp + "/policy", "unknown policy '" + r.policy + "'");
    }
    if (auto [it, fresh] = matches.emplace(match_key(r), i); !fresh) {
      return err(rp, "same match as " + rule_path(cfg.steering[it->second], it->second));
    }
    if (r.kind == SteeringKind::qp_range) {
      Scope scope{r.has_dst, r.has_dst ? r.dst.family : net::Family::none,
                  r.has_dst ? r.dst.bytes : std::array<uint8_t, 16>{}, r.dscp ? int(*r.dscp) : -1};
      auto& by_low = ranges[scope];
      // Neighbours by qp_low: the previous range must end before us, the next start after.
      auto next = by_low.lower_bound(r.qp_low);
      auto overlap = [&](size_t j) {
        return err(rp + "/qp-range", "QP range " + std::to_string(r.qp_low) + ".." +
                                         std::to_string(r.qp_high) + " overlaps " +
                                         rule_path(cfg.steering[j], j));
      };
      if (next != by_low.end() && cfg.steering[next->second].qp_low <= r.qp_high) {
        return overlap(next->second);
      }
      if (next != by_low.begin()) {
        auto prev = std::prev(next);
        if (cfg.steering[prev->second].qp_high >= r.qp_low) return overlap(prev->second);
      }
      by_low.emplace(r.qp_low, i);
    }
  }
  return std::nullopt;
}

std::optional<ConfigError> validate_local_sids(const GatewayConfig& cfg,
                                               const std::map<net::Ipv6Addr, Owner>& policy_sids) {
  std::set<net::Ipv6Addr> seen;
  for (size_t i = 0; i < cfg.local_sids.size(); ++i) {
    const LocalSid& ls = cfg.local_sids[i];
    const std::string lp = local_sid_path(ls.sid);
    if (i >= cfg.capacities.local_sids) {
      return err(lp, std::to_string(cfg.local_sids.size()) +
                         " local SIDs exceed capacities/local-sids (" +
                         std::to_string(cfg.capacities.local_sids) + ")");
    }
    if (auto why = bad_unicast(ls.sid)) return err(lp + "/sid", "local SID " + *why);
    if (!seen.insert(ls.sid).second) {
      return err(lp, "duplicate local SID " + net::to_string(ls.sid));
    }
    switch (ls.behavior) {
      case srv6::LocalSidBehavior::end_dx4:
      case srv6::LocalSidBehavior::end_dx6:
      case srv6::LocalSidBehavior::end_dt46:
      case srv6::LocalSidBehavior::end_probe:
        break;
      default:
        return err(lp + "/behavior", "unknown behavior " + std::to_string(int(ls.behavior)));
    }
    if (auto it = policy_sids.find(ls.sid); it != policy_sids.end()) {
      return err(lp, "local SID " + net::to_string(ls.sid) + " is also a SID of " +
                         describe(it->second) +
                         ": traffic to it would be both encapsulated and decapsulated here");
    }
  }
  return std::nullopt;
}

// Probed policies: the remote's probe SID is a unicast address, and we have what it takes to
// send probes and receive the replies (docs/probing.md).
std::optional<ConfigError> validate_probes(const GatewayConfig& cfg) {
  bool has_local_probe_sid = false;
  for (const LocalSid& ls : cfg.local_sids)
    has_local_probe_sid |= ls.behavior == srv6::LocalSidBehavior::end_probe;
  for (const Policy& p : cfg.policies) {
    if (!p.probe_sid) continue;
    const std::string path = policy_path(p.name) + "/probe-sid";
    if (auto why = bad_unicast(*p.probe_sid)) return err(path, "probe-sid " + *why);
    if (!has_local_probe_sid) {
      return err(path,
                 "probe-sid needs a local SID with behavior end-probe on this gateway "
                 "(where the replies come back)");
    }
    if (!cfg.fabric_nexthop_mac) {
      return err(path,
                 "probe-sid needs ports/fabric-nexthop-mac (the gateway sends probes itself: "
                 "there is no host frame to take the destination MAC from)");
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<ConfigError> validate(const GatewayConfig& cfg) {
  if (auto e = validate_ports(cfg)) return e;
  if (auto why = bad_unicast(cfg.source)) {
    return err(std::string(kRoot) + "/source-address", "source-address " + *why);
  }
  if (cfg.hop_limit == 0) return err(std::string(kRoot) + "/hop-limit", "hop-limit must be 1..255");
  if (auto e = validate_capacities(cfg.capacities)) return e;
  if (auto e = engine::check(cfg.engine))
    return err(std::string(kRoot) + "/engine/" + e->field, e->field + " " + e->message);
  if (auto e = engine::check(cfg.probe))
    return err(std::string(kRoot) + "/probe/" + e->field, e->field + " " + e->message);
  std::map<net::Ipv6Addr, Owner> policy_sids;
  if (auto e = validate_policies(cfg, policy_sids)) return e;
  if (auto e = validate_probes(cfg)) return e;
  if (auto e = validate_steering(cfg)) return e;
  if (auto e = validate_local_sids(cfg, policy_sids)) return e;
  return std::nullopt;
}

}  // namespace srv6gw::config
