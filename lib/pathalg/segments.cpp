// SPDX-License-Identifier: BSD-3-Clause
#include "pathalg/segments.hpp"

namespace srv6gw::pathalg {

const char* to_string(SidStyle s) {
  return s == SidStyle::minimal ? "minimal" : "every-switch";
}

std::optional<SidStyle> parse_sid_style(std::string_view name) {
  if (name == "minimal") return SidStyle::minimal;
  if (name == "every-switch") return SidStyle::every_switch;
  return std::nullopt;
}

namespace {

bool switch_sid(const Topology& t, NodeId n, const SegmentOptions& opt,
                std::vector<net::Ipv6Addr>& sids, std::string* error) {
  const Node& node = t.node(n);
  const bool usid = opt.encap == srv6::EncapMode::usid;
  const auto& sid = usid ? node.usid : node.sid;
  if (!sid) {
    if (error) {
      *error = "switch '" + node.name + "' has no " + (usid ? "usid" : "sid") +
               " but is a waypoint of the path";
    }
    return false;
  }
  sids.push_back(*sid);
  return true;
}

}  // namespace

bool build_sids(const PathCache& cache, std::span<const NodeId> path, const SegmentOptions& opt,
                std::vector<net::Ipv6Addr>& sids, std::string* error) {
  sids.clear();
  const Topology& t = cache.topology();
  if (path.size() < 2) {
    if (error) *error = "a path needs at least two nodes";
    return false;
  }
  const NodeId dst = path.back();
  const Node& d = t.node(dst);
  if (!d.is_host()) {
    if (error) *error = "the path does not end at a host ('" + d.name + "')";
    return false;
  }
  const size_t last = path.size() - 1;
  if (opt.style == SidStyle::every_switch) {
    for (size_t i = 0; i < last; ++i) {
      if (t.node(path[i]).is_host()) continue;
      if (!switch_sid(t, path[i], opt, sids, error)) return false;
    }
  } else {
    // From waypoint i, the farthest j whose segment i..j is the design's only shortest route
    // from path[i] to path[j]; the fabric's shortest-path forwarding then follows the path.
    size_t i = 0;
    while (i < last) {
      size_t next = i + 1;
      for (size_t j = last; j > i + 1; --j) {
        if (cache.distance(path[i], path[j]) == j - i &&
            cache.shortest_path_count(path[i], path[j]) == 1) {
          next = j;
          break;
        }
      }
      if (next == last) break;
      if (!switch_sid(t, path[next], opt, sids, error)) return false;
      i = next;
    }
  }
  const bool usid = opt.encap == srv6::EncapMode::usid;
  if (usid) {
    if (!d.gateway.usid) {
      if (error) *error = "host '" + d.name + "' has no gateway usid (needed in usid mode)";
      return false;
    }
    sids.push_back(*d.gateway.usid);
  } else {
    sids.push_back(d.gateway.decap_sid);
  }
  return true;
}

std::optional<std::vector<uint8_t>> encap_bytes(const net::Ipv6Addr& source,
                                                std::span<const net::Ipv6Addr> sids,
                                                srv6::EncapMode mode, srv6::UsidFormat usid,
                                                uint16_t tag, uint8_t hop_limit,
                                                srv6::BuildStatus* status) {
  srv6::TemplateSpec spec;
  spec.source = source;
  spec.sids = sids;
  spec.mode = mode;
  spec.usid = usid;
  spec.tag = tag;
  spec.hop_limit = hop_limit;
  srv6::EncapTemplate tmpl;
  const srv6::BuildStatus st = srv6::build_template(spec, tmpl);
  if (status) *status = st;
  if (st != srv6::BuildStatus::ok) return std::nullopt;
  return std::vector<uint8_t>(tmpl.bytes, tmpl.bytes + tmpl.size);
}

}  // namespace srv6gw::pathalg
