// SPDX-License-Identifier: BSD-3-Clause
// Decapsulation for local SIDs (RFC 8986 End.DX4, End.DX6, End.DT46) with RFC 6040 egress
// ECN. Works on a span starting at the outer IPv6 header; byte spans only.
#pragma once

#include <cstdint>
#include <span>

#include "net/addr.hpp"
#include "net/enum_names.hpp"
#include "net/headers.hpp"

namespace srv6gw::srv6 {

// end_probe: our own behaviour for path health probes (srv6/probe.hpp, docs/design/probing.md): a
// request is reflected back along its return list, a reply is handed to the prober. decap()
// refuses it (bad_next_header): probes are never decapsulated toward the host.
enum class LocalSidBehavior : uint8_t { end_dx4, end_dx6, end_dt46, end_probe };
const char* to_string(LocalSidBehavior b);

#define SRV6GW_DECAP_STATUSES(X)                                                                   \
  X(ok, "ok")                                                                                      \
  X(truncated_outer, "truncated_outer")   /* shorter than an IPv6 header */                        \
  X(not_ipv6, "not_ipv6")                 /* outer version is not 6 */                             \
  X(bad_outer_length, "bad_outer_length") /* payload length beyond the span */                     \
  X(truncated_ext, "truncated_ext") /* an extension header (or the SRH) runs past the packet */    \
  X(ext_chain_too_long, "ext_chain_too_long") /* more extension headers than the parser's bound */ \
  X(srh_inconsistent,                                                                              \
    "srh_inconsistent") /* routing type 4 with last entry / length that do not agree */            \
  X(segments_left_nonzero,                                                                         \
    "segments_left_nonzero") /* SRH with segments left != 0: not the last segment */               \
  X(bad_next_header,                                                                               \
    "bad_next_header") /* inner protocol is not 4/41 (or not the one the behavior wants) */        \
  X(truncated_inner,                                                                               \
    "truncated_inner") /* inner header missing or its length beyond the outer payload */           \
  X(ecn_ce_on_not_ect,                                                                             \
    "ecn_ce_on_not_ect") /* RFC 6040: outer CE onto a not-ECT inner must be dropped */             \
  X(outer_fragment,                                                                                \
    "outer_fragment") /* outer IPv6 fragment (offset or M set): we do not reassemble */            \
  X(headers_split,                                                                                 \
    "headers_split") /* chained packet: the header chain does not fit in the first segment */

enum class DecapStatus : uint8_t { SRV6GW_ENUM_MEMBERS(SRV6GW_DECAP_STATUSES) count_ };
inline constexpr auto kDecapStatusNames = SRV6GW_ENUM_NAMES(SRV6GW_DECAP_STATUSES);
static_assert(kDecapStatusNames.size() == size_t(DecapStatus::count_));
const char* to_string(DecapStatus s);

struct DecapResult {
  uint16_t inner_offset = 0;  // offset of the inner IP header from the outer IPv6 header
  uint16_t inner_len = 0;     // inner IP packet length (from its own header)
  net::Family inner_family = net::Family::none;
  uint8_t outer_ecn = 0;  // for congestion feedback
  bool had_srh = false;
  uint16_t srh_tag = 0;          // SRH Tag of the packet (the remote gateway's path id)
  bool inner_marked_ce = false;  // RFC 6040 set CE on the inner header
  friend bool operator==(const DecapResult&, const DecapResult&) = default;
};

// Validates the outer header chain for `behavior`, applies RFC 6040 egress ECN to the inner
// header in place (IPv4 checksum updated), and reports where the inner packet is.
// Extension headers (hop-by-hop, destination options, atomic fragments, routing headers with
// segments left 0, the SRH) are walked, at most net::kMaxExtHeaders of them. The RFC 6040
// egress table is applied in full: outer CE marks an ECT inner CE (not-ECT inner: dropped),
// outer ECT(1) turns an ECT(0) inner into ECT(1), anything else leaves the inner unchanged.
// On ecn_ce_on_not_ect the result is filled (the packet is well formed, only undeliverable).
// `outer` must start at the outer IPv6 header and may include trailing bytes (Ethernet
// padding); lengths come from the headers.
DecapStatus decap(std::span<uint8_t> outer, LocalSidBehavior behavior, DecapResult& result);

// decap() without its fast path for the usual layout (one SRH or none, inner IPv4 without
// options or IPv6, ECN unchanged): the walk for every packet. Same results; fuzz_decap and
// the tests compare the two.
DecapStatus decap_general(std::span<uint8_t> outer, LocalSidBehavior behavior, DecapResult& result);

// The same for a packet of `packet_len` bytes (from the outer IPv6 header) of which only
// `headers` is contiguous (the first mbuf segment of a chain): lengths are checked against
// packet_len, every header read (outer chain and the inner IP header) must lie in `headers`,
// else headers_split. With packet_len == headers.size() it is decap() above.
DecapStatus decap(std::span<uint8_t> headers, size_t packet_len, LocalSidBehavior behavior,
                  DecapResult& result);

}  // namespace srv6gw::srv6
