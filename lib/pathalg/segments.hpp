// SPDX-License-Identifier: BSD-3-Clause
// Segment lists for paths: which switches of a path become SIDs (waypoints) and which SID of
// each (End SID or uN micro-SID), ending with the destination gateway's decapsulation SID.
// The encapsulation bytes come from the gateway's own template builder (lib/srv6), so they
// are the bytes srv6gw and srv6gw-pcap produce for the same SIDs.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "net/addr.hpp"
#include "pathalg/paths.hpp"
#include "pathalg/topology.hpp"
#include "srv6/encap.hpp"

namespace srv6gw::pathalg {

enum class SidStyle : uint8_t {
  // Only the switches that pin the path, given that the fabric forwards between waypoints on
  // its shortest paths: from each waypoint, the farthest switch of the path that the path
  // reaches on the design's only shortest route becomes the next waypoint. A 2-tier path is
  // [spine, gateway]; a k-ary fat-tree path between pods [core, gateway].
  minimal,
  // Every switch of the path, then the gateway: [leaf, spine, leaf, gateway] (2-tier).
  every_switch,
};
const char* to_string(SidStyle s);
std::optional<SidStyle> parse_sid_style(std::string_view name);

struct SegmentOptions {
  srv6::EncapMode encap = srv6::EncapMode::encaps;
  srv6::UsidFormat usid;  // usid mode
  SidStyle style = SidStyle::minimal;
};

// The SIDs of a host-to-host path (nodes as PathList gives them): switch waypoints' End SIDs
// (uN micro-SIDs in usid mode) then the destination gateway's decap SID (its usid in usid
// mode). False with `error` naming the switch or host that lacks the SID the mode needs.
// `cache` (of the same topology) answers the shortest-path questions of the minimal style.
bool build_sids(const PathCache& cache, std::span<const NodeId> path, const SegmentOptions& opt,
                std::vector<net::Ipv6Addr>& sids, std::string* error = nullptr);

// The outer IPv6 header + SRH the gateway prepends for these SIDs (srv6::build_template with
// the given source, mode, format, tag and hop limit): exactly the template's bytes, with
// payload length 0, traffic class 0, flow label 0 and next header 4 (IPv4 inner).
// nullopt when the template cannot be built (the status in `status`).
std::optional<std::vector<uint8_t>> encap_bytes(const net::Ipv6Addr& source,
                                                std::span<const net::Ipv6Addr> sids,
                                                srv6::EncapMode mode, srv6::UsidFormat usid,
                                                uint16_t tag, uint8_t hop_limit = 64,
                                                srv6::BuildStatus* status = nullptr);

}  // namespace srv6gw::pathalg
