// SPDX-License-Identifier: BSD-3-Clause
// Path health probes (docs/design/probing.md): the wire format, built, parsed and reflected on byte
// spans starting at the outer IPv6 header. No DPDK: the daemon's main lcore builds requests
// into mbufs, the workers reflect requests and parse replies through thin adapters.
//
// A probe is IPv6 + SRH (routing type 4) + UDP (destination port kUdpPort) + a 32-byte probe
// header, followed in a request by the return segment list (16 bytes per SID, path order).
// The request's SRH steers it over the transit SIDs of the path under test to the remote
// gateway's probe SID (a local SID with behaviour end-probe). The remote turns it into a reply
// in place: SRH = the return list, type = reply, the return list dropped from the payload,
// so a reply is never longer than its request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "net/addr.hpp"
#include "net/enum_names.hpp"
#include "net/headers.hpp"

namespace srv6gw::srv6::probe {

inline constexpr uint16_t kUdpPort = 62316;     // UDP destination port of probes
inline constexpr uint32_t kMagic = 0x53365052;  // "S6PR"
inline constexpr uint8_t kVersion = 1;
inline constexpr size_t kHeaderLen = 32;      // probe header after the UDP header
inline constexpr unsigned kMaxSegments = 16;  // per direction
inline constexpr size_t kMaxRequestLen =
    40 + 8 + 16 * kMaxSegments + 8 + kHeaderLen + 16 * kMaxSegments;  // 600

enum class Type : uint8_t { request = 1, reply = 2 };

// What a probe carries besides its route.
struct Fields {
  Type type = Type::request;
  uint16_t path_id = 0;       // the sender's path id (also in the SRH Tag)
  uint32_t seq = 0;           // per path, from the sender
  uint64_t tx_time = 0;       // sender's clock (opaque to the reflector, echoed)
  uint64_t reflect_time = 0;  // reflector's clock in a reply (informational), 0 in a request
};

struct RequestSpec {
  net::Ipv6Addr source;
  // Path order. segments: transit SIDs then the remote's probe SID (1..16). return_segments:
  // the way back, ending with our own probe SID (1..16).
  std::span<const net::Ipv6Addr> segments;
  std::span<const net::Ipv6Addr> return_segments;
  uint8_t hop_limit = 64;
  uint8_t traffic_class = 0;
};

#define SRV6GW_PROBE_STATUSES(X)                                                                   \
  X(ok, "ok")                                                                                      \
  X(buffer_too_small, "buffer_too_small")   /* build: the output span cannot hold the probe */     \
  X(bad_segment_count, "bad_segment_count") /* build: 0 or more than 16 SIDs in a direction */     \
  X(truncated, "truncated")                 /* a header runs past the packet */                    \
  X(not_ipv6, "not_ipv6")                   /* version is not 6 */                                 \
  X(bad_length, "bad_length")               /* IPv6 payload length beyond the span */              \
  X(no_srh, "no_srh")                       /* next header is not a routing header of type 4 */    \
  X(srh_inconsistent, "srh_inconsistent")   /* last entry / length / segments left do not agree */ \
  X(segments_left_nonzero, "segments_left_nonzero") /* not at the last segment: not for us yet */  \
  X(not_probe, "not_probe")                         /* not UDP to kUdpPort */                      \
  X(bad_udp_length, "bad_udp_length") /* UDP length does not match the IPv6 payload */             \
  X(bad_checksum, "bad_checksum")     /* UDP checksum wrong */                                     \
  X(bad_magic, "bad_magic")                                                                        \
  X(bad_version, "bad_version")                                                                    \
  X(bad_type, "bad_type")                                                                          \
  X(bad_return_list,                                                                               \
    "bad_return_list") /* request: return list missing, empty, longer than 16, or truncated */

enum class Status : uint8_t { SRV6GW_ENUM_MEMBERS(SRV6GW_PROBE_STATUSES) count_ };
inline constexpr auto kStatusNames = SRV6GW_ENUM_NAMES(SRV6GW_PROBE_STATUSES);
static_assert(kStatusNames.size() == size_t(Status::count_));
const char* to_string(Status s);

// Bytes of a request with `segments` SIDs out and `returns` SIDs back (outer IPv6 onward).
constexpr size_t request_len(size_t segments, size_t returns) {
  return 40 + 8 + 16 * segments + 8 + kHeaderLen + 16 * returns;
}
// Bytes of the reply to a request whose return list has `returns` SIDs.
constexpr size_t reply_len(size_t returns) {
  return 40 + 8 + 16 * returns + 8 + kHeaderLen;
}

// Writes a request (fields.type is forced to request) into `out`; `len` receives its length.
Status build_request(const RequestSpec& spec, const Fields& fields, std::span<uint8_t> out,
                     size_t& len);

struct Parsed {
  Fields fields;
  net::Ipv6Addr destination;  // outer destination address (the probe SID it arrived at)
  uint8_t traffic_class = 0;
  uint16_t tag = 0;           // SRH Tag
  uint8_t n_return = 0;       // request: SIDs in the return list
  size_t returns_offset = 0;  // request: where the return list starts in the packet
};

// Checks a probe that arrived at one of our probe SIDs (segments left must be 0) and reads it.
// `pkt` starts at the outer IPv6 header and may hold trailing bytes (Ethernet padding).
Status parse(std::span<const uint8_t> pkt, Parsed& out);

// Turns a request (already parsed) into its reply in place: source = the probe SID it arrived
// at, SRH = the return list (segments left = n - 1), destination = the return list's first
// SID, type = reply, reflect_time stamped, UDP checksum recomputed. `len` receives the reply's
// length (never more than the request's: the caller trims the buffer).
Status reflect(std::span<uint8_t> pkt, const Parsed& request, uint8_t hop_limit,
               uint64_t reflect_time, size_t& len);

// Internet checksum of UDP over IPv6 (RFC 8200 section 8.1): pseudo-header with `src`,
// `final_dst` (the last segment when there is an SRH), the UDP length and next header 17.
uint16_t udp6_checksum(const net::Ipv6Addr& src, const net::Ipv6Addr& final_dst,
                       std::span<const uint8_t> udp);

}  // namespace srv6gw::srv6::probe
