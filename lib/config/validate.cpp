// SPDX-License-Identifier: BSD-3-Clause
// Semantic validation of a GatewayConfig. The YANG module checks types and structure of
// files; this checks the same constraints again (the gRPC agent builds configurations
// without libyang) plus those YANG cannot express cheaply: path ids unique across the whole
// gateway, uSID SIDs inside the first SID's block, local SIDs distinct from policy SIDs,
// capacity limits. Errors name the node by its YANG instance path. This file: the whole
// configuration, policies, steering rules, local SIDs, probes; ports/ and rails/ (the port
// pairs and what may change about them while running) are validate_ports.cpp's. The
// relations shared with ConfigIndex (match keys, table counts, cross-object refusals) are
// relations.cpp's.
#include "config/validate.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "config/validate_detail.hpp"

namespace srv6gw::config {

using namespace detail;

namespace {

// engine/source-entropy-bits N writes flow entropy into source bits 16..16+N-1, above the
// path-id field: the low 16 + N bits must be zero (the source prefix is a /(112 - N) or shorter).
std::optional<ConfigError> check_entropy_room(const GatewayConfig& cfg, const net::Ipv6Addr& source,
                                              const std::string& path) {
  const unsigned bits = cfg.engine.source_entropy_bits;
  if (bits == 0 || bits > srv6::kMaxSourceEntropyBits ||
      srv6::source_has_entropy_room(source, bits))
    return std::nullopt;
  return err(path,
             "source-address " + net::to_string(source) + " must end in " +
                 std::to_string(16 + bits) + " zero bits when engine/source-entropy-bits is " +
                 std::to_string(bits) + " (16 path-id bits and the flow entropy go there: a /" +
                 std::to_string(112 - bits) + " or shorter source prefix; docs/design/engine.md)");
}

}  // namespace

namespace detail {

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

// engine/path-id-in-source writes the path id into the low 16 bits of the outer source:
// every source address must leave them zero (the gateway owns the /112 around it).
std::optional<ConfigError> check_path_id_room(const GatewayConfig& cfg, const net::Ipv6Addr& source,
                                              const std::string& path) {
  if (cfg.engine.path_id_in_source && !srv6::source_has_path_id_room(source)) {
    return err(path, "source-address " + net::to_string(source) +
                         " must end in 16 zero bits when engine/path-id-in-source is on (the "
                         "path id goes there; docs/design/engine.md)");
  }
  return check_entropy_room(cfg, source, path);
}

}  // namespace detail

namespace {

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

std::optional<ConfigError> validate_capacities(const Capacities& c) {
  const std::string base = std::string(kRootPath) + "/capacities/";
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

// Where a path id or a SID was first seen, for the refusals naming it.
struct Owner {
  std::string policy;
  std::string segment_list;
};

std::optional<ConfigError> validate_usid_list(const Policy& p, const SegmentList& sl,
                                              const std::string& sl_path) {
  const unsigned block = p.usid.block_bits;
  const unsigned usid = p.usid.usid_bits;
  const net::Ipv6Addr& first = sl.sids.front();
  for (const auto& sid : sl.sids) {
    if (!bits_equal(sid, first, block)) {
      return err(sid_path(sl_path, sid),
                 "SID " + net::to_string(sid) + " is outside the " + std::to_string(block) +
                     "-bit locator block of the first SID " + net::to_string(first));
    }
    if (!bits_zero_from(sid, block + usid)) {
      return err(sid_path(sl_path, sid), "SID " + net::to_string(sid) +
                                             " is not a micro-SID: bits after the " +
                                             std::to_string(block) + "-bit block and " +
                                             std::to_string(usid) + "-bit micro-SID must be zero");
    }
    if (bit_field(sid, block, usid) == 0) {
      return err(sid_path(sl_path, sid), "SID " + net::to_string(sid) +
                                             " has an all-zero micro-SID (the end-of-"
                                             "container marker)");
    }
  }
  return std::nullopt;
}

std::optional<ConfigError> check_policy_impl(const GatewayConfig& cfg, const Policy& p) {
  const std::string pp = policy_path(p.name);
  if (auto why = bad_name(p.name)) return err(pp + "/name", "policy name " + *why);
  if (p.endpoint && p.endpoint->family == net::Family::none) {
    return err(pp + "/endpoint", "endpoint has no address family");
  }
  if (p.source) {
    if (auto why = bad_unicast(*p.source)) {
      return err(pp + "/source-address", "source-address " + *why);
    }
    if (auto e = check_path_id_room(cfg, *p.source, pp + "/source-address")) return e;
  }
  if (auto e = check_policy_rails(cfg, p)) return e;
  // The probe SID's own checks; validate_probes() adds the one on the local SIDs.
  if (p.probe_sid) {
    if (auto why = bad_unicast(*p.probe_sid)) return err(pp + "/probe-sid", "probe-sid " + *why);
    if (auto e = check_probe_nexthop(cfg, p)) return e;
  }
  if (p.probe_dscp && *p.probe_dscp > 63) {
    return err(pp + "/probe-dscp",
               "probe-dscp " + std::to_string(*p.probe_dscp) + " is not a DSCP (0..63)");
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
      return err(pp + "/usid-format/block-bits",
                 "block-bits + usid-bits must not exceed 128, not " + std::to_string(block + usid));
    }
  }
  const std::string sel = pp + "/selection";
  if (p.flowlet_gap_us < 1 || p.flowlet_gap_us > kMaxFlowletGapUs) {
    return err(sel + "/flowlet-gap-us", "flowlet-gap-us must be 1.." +
                                            std::to_string(kMaxFlowletGapUs) + ", not " +
                                            std::to_string(p.flowlet_gap_us));
  }
  if (p.idle_gap_us < 1 || p.idle_gap_us > kMaxFlowletGapUs) {
    return err(sel + "/idle-gap-us", "idle-gap-us must be 1.." + std::to_string(kMaxFlowletGapUs) +
                                         ", not " + std::to_string(p.idle_gap_us));
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
  std::map<uint16_t, const SegmentList*> own_path_ids;
  bool has_active = false;
  for (const SegmentList& sl : p.segment_lists) {
    const std::string sp = segment_list_path(p.name, sl.name);
    if (auto why = bad_name(sl.name)) return err(sp + "/name", "segment list name " + *why);
    if (!sl.load_group.empty()) {
      if (auto why = bad_name(sl.load_group)) return err(sp + "/load-group", "load-group " + *why);
    }
    if (!list_names.insert(sl.name).second) {
      return err(sp, "duplicate segment list name '" + sl.name + "' in policy '" + p.name + "'");
    }
    if (sl.path_id > kMaxPathId) {
      return err(sp + "/path-id", "path-id must be 0.." + std::to_string(kMaxPathId) + ", not " +
                                      std::to_string(sl.path_id) +
                                      " (the SRH Tag's top bit marks a reflected path id)");
    }
    if (auto [it, fresh] = own_path_ids.emplace(sl.path_id, &sl); !fresh) {
      return path_id_conflict(p.name, sl.name, sl.path_id, p.name, it->second->name);
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
      if (auto why = bad_unicast(sid)) return err(sid_path(sp, sid), "SID " + *why);
      if (!in_list.insert(sid).second) {
        return err(sid_path(sp, sid),
                   "SID " + net::to_string(sid) + " appears twice in the segment list");
      }
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
  return std::nullopt;
}

std::optional<ConfigError> validate_policies(const GatewayConfig& cfg,
                                             std::map<net::Ipv6Addr, Owner>& policy_sids) {
  std::set<std::string, std::less<>> names;
  std::map<uint16_t, Owner> path_ids;
  if (cfg.policies.size() > cfg.capacities.policies) {
    return too_many_policies(cfg.policies[cfg.capacities.policies].name, cfg.policies.size(),
                             cfg.capacities.policies);
  }
  for (const Policy& p : cfg.policies) {
    if (auto e = check_policy_impl(cfg, p)) return e;
    if (!names.insert(p.name).second) {
      return err(policy_path(p.name), "duplicate policy name '" + p.name + "'");
    }
    for (const SegmentList& sl : p.segment_lists) {
      if (auto [it, fresh] = path_ids.emplace(sl.path_id, Owner{p.name, sl.name}); !fresh) {
        return path_id_conflict(p.name, sl.name, sl.path_id, it->second.policy,
                                it->second.segment_list);
      }
      for (const auto& sid : sl.sids) policy_sids.emplace(sid, Owner{p.name, sl.name});
    }
  }
  return std::nullopt;
}

std::optional<ConfigError> check_rule_impl(const SteeringRule& r, size_t index) {
  // Built only on refusal: this runs for every rule of a batch or file.
  auto rp = [&] { return rule_path(r, index); };
  switch (r.kind) {
    case SteeringKind::exact:
      if (r.dst.family == net::Family::none) {
        return err(rp() + "/exact/destination", "exact rule needs a destination address");
      }
      if (r.dest_qp > kMaxQp) {
        return err(rp() + "/exact/dest-qp",
                   "dest-qp " + std::to_string(r.dest_qp) + " does not fit in 24 bits");
      }
      break;
    case SteeringKind::dst_any_qp:
      if (r.dst.family == net::Family::none) {
        return err(rp() + "/destination", "destination rule needs a destination address");
      }
      break;
    case SteeringKind::qp_range:
      if (r.qp_low > kMaxQp) {
        return err(rp() + "/qp-range/qp-low",
                   "qp-low " + std::to_string(r.qp_low) + " does not fit in 24 bits");
      }
      if (r.qp_high > kMaxQp) {
        return err(rp() + "/qp-range/qp-high",
                   "qp-high " + std::to_string(r.qp_high) + " does not fit in 24 bits");
      }
      if (r.qp_low > r.qp_high) {
        return err(rp() + "/qp-range/qp-high", "qp-high must not be lower than qp-low");
      }
      if (r.has_dst && r.dst.family == net::Family::none) {
        return err(rp() + "/qp-range/destination", "destination has no address family");
      }
      break;
    case SteeringKind::prefix: {
      const unsigned width = family_bits(r.dst.family);
      if (width == 0) return err(rp() + "/prefix", "prefix has no address family");
      if (r.prefix_len > width) {
        return err(rp() + "/prefix", "prefix length " + std::to_string(r.prefix_len) + " exceeds " +
                                         std::to_string(width));
      }
      if (!host_bits_clear(r.dst, r.prefix_len)) {
        return err(rp() + "/prefix", "prefix " + net::to_string(r.dst) + "/" +
                                         std::to_string(r.prefix_len) +
                                         " has bits set beyond its length");
      }
      break;
    }
    default:
      return err(rp(), "unknown rule kind " + std::to_string(int(r.kind)));
  }
  if (r.dscp && *r.dscp > 63) {
    return err(rp() + "/dscp", "dscp must be 0..63, not " + std::to_string(*r.dscp));
  }
  if (r.policy.empty()) return err(rp() + "/policy", "rule names no policy");
  return std::nullopt;
}

std::optional<ConfigError> validate_steering(const GatewayConfig& cfg) {
  std::unordered_set<std::string_view> policies;
  for (const Policy& p : cfg.policies) policies.insert(p.name);

  std::unordered_map<uint32_t, size_t> ids;
  std::unordered_map<SteeringMatch, size_t, SteeringMatchHash> matches;
  ids.reserve(cfg.steering.size());
  matches.reserve(cfg.steering.size());
  // QP ranges of one scope (destination or none, DSCP) must not overlap: a packet in two
  // ranges would have no single most specific rule. Keyed by scope, then qp_low.
  std::map<SteeringMatch, std::map<uint32_t, size_t>> ranges;
  SteeringCounts counts;

  for (size_t i = 0; i < cfg.steering.size(); ++i) {
    const SteeringRule& r = cfg.steering[i];
    if (r.id != 0) {
      if (auto [it, fresh] = ids.emplace(r.id, i); !fresh) {
        return err(rule_path(r, i), "duplicate rule id " + std::to_string(r.id));
      }
    }
    if (auto e = check_rule_impl(r, i)) return e;
    counts.add(r, 1);
    if (auto e = counts.check(cfg.capacities, r, i)) return e;
    if (!policies.count(r.policy)) return unknown_policy(r, i);
    if (auto [it, fresh] = matches.emplace(steering_match(r), i); !fresh) {
      return same_match(r, i, rule_path(cfg.steering[it->second], it->second));
    }
    if (r.kind == SteeringKind::qp_range) {
      auto& by_low = ranges[qp_range_scope(r)];
      // Neighbours by qp_low: the previous range must end before us, the next start after.
      auto next = by_low.lower_bound(r.qp_low);
      auto overlap = [&](size_t j) {
        return qp_range_overlap(r, i, rule_path(cfg.steering[j], j));
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

std::optional<ConfigError> check_local_sid_impl(const LocalSid& ls) {
  const std::string lp = local_sid_path(ls.sid);
  if (auto why = bad_unicast(ls.sid)) return err(lp + "/sid", "local SID " + *why);
  switch (ls.behavior) {
    case srv6::LocalSidBehavior::end_dx4:
    case srv6::LocalSidBehavior::end_dx6:
    case srv6::LocalSidBehavior::end_dt46:
    case srv6::LocalSidBehavior::end_probe:
      break;
    default:
      return err(lp + "/behavior", "unknown behavior " + std::to_string(int(ls.behavior)));
  }
  return std::nullopt;
}

std::optional<ConfigError> validate_local_sids(const GatewayConfig& cfg,
                                               const std::map<net::Ipv6Addr, Owner>& policy_sids) {
  // The shared list, then each rail's: one SID table, so a SID is unique across all of them.
  std::vector<std::pair<const LocalSid*, std::string>> all;  // SID, its path
  for (const LocalSid& ls : cfg.local_sids) all.emplace_back(&ls, local_sid_path(ls.sid));
  for (const Rail& r : cfg.rails)
    for (const LocalSid& ls : r.local_sids)
      all.emplace_back(&ls, rail_local_sid_path(r.name, ls.sid));
  std::set<net::Ipv6Addr> seen;
  for (size_t i = 0; i < all.size(); ++i) {
    const LocalSid& ls = *all[i].first;
    const std::string& lp = all[i].second;
    if (i >= cfg.capacities.local_sids) {
      ConfigError e = too_many_local_sids(ls.sid, all.size(), cfg.capacities.local_sids);
      e.path = lp;
      return e;
    }
    if (auto e = check_local_sid_impl(ls)) {
      e->path = lp + e->path.substr(local_sid_path(ls.sid).size());  // the leaf under lp
      return e;
    }
    if (!seen.insert(ls.sid).second) {
      return err(lp, "duplicate local SID " + net::to_string(ls.sid));
    }
    if (auto it = policy_sids.find(ls.sid); it != policy_sids.end()) {
      ConfigError e = local_sid_conflict(ls.sid, it->second.policy, it->second.segment_list);
      e.path = lp;
      return e;
    }
  }
  return std::nullopt;
}

// Probed policies need a local end-probe SID, where the replies come back (docs/design/probing.md).
// The probe SID's own checks (unicast, fabric-nexthop-mac) are check_policy's.
std::optional<ConfigError> validate_probes(const GatewayConfig& cfg) {
  bool has_local_probe_sid = false;
  for (const LocalSid& ls : cfg.local_sids)
    has_local_probe_sid |= ls.behavior == srv6::LocalSidBehavior::end_probe;
  for (const Rail& r : cfg.rails)
    for (const LocalSid& ls : r.local_sids)
      has_local_probe_sid |= ls.behavior == srv6::LocalSidBehavior::end_probe;
  if (has_local_probe_sid) return std::nullopt;
  for (const Policy& p : cfg.policies) {
    if (p.probe_sid) return probe_needs_local_sid(p.name);
  }
  return std::nullopt;
}

}  // namespace

std::optional<ConfigError> validate(const GatewayConfig& cfg) {
  if (auto e = validate_ports(cfg)) return e;
  if (auto why = bad_unicast(cfg.source)) {
    return err(std::string(kRootPath) + "/source-address", "source-address " + *why);
  }
  if (cfg.hop_limit == 0)
    return err(std::string(kRootPath) + "/hop-limit", "hop-limit must be 1..255");
  if (auto e = validate_capacities(cfg.capacities)) return e;
  if (auto e = engine::check(cfg.engine))
    return err(std::string(kRootPath) + "/engine/" + e->field, e->field + " " + e->message);
  if (auto e = check_path_id_room(cfg, cfg.source, std::string(kRootPath) + "/source-address"))
    return e;
  if (auto e = engine::check(cfg.probe))
    return err(std::string(kRootPath) + "/probe/" + e->field, e->field + " " + e->message);
  std::map<net::Ipv6Addr, Owner> policy_sids;
  if (auto e = validate_policies(cfg, policy_sids)) return e;
  if (auto e = validate_probes(cfg)) return e;
  if (auto e = validate_steering(cfg)) return e;
  if (auto e = validate_local_sids(cfg, policy_sids)) return e;
  return std::nullopt;
}

std::optional<ConfigError> check_policy(const GatewayConfig& settings, const Policy& p) {
  return check_policy_impl(settings, p);
}

std::optional<ConfigError> check_rule(const SteeringRule& r, size_t index) {
  return check_rule_impl(r, index);
}

std::optional<ConfigError> check_local_sid(const LocalSid& ls) {
  return check_local_sid_impl(ls);
}

}  // namespace srv6gw::config
