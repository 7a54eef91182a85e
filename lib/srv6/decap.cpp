// SPDX-License-Identifier: BSD-3-Clause
#include "srv6/decap.hpp"

#include "net/bytes.hpp"
#include "net/ecn.hpp"
#include "net/parse.hpp"

namespace srv6gw::srv6 {

const char* to_string(LocalSidBehavior b) {
  switch (b) {
    case LocalSidBehavior::end_dx4:
      return "end_dx4";
    case LocalSidBehavior::end_dx6:
      return "end_dx6";
    case LocalSidBehavior::end_dt46:
      return "end_dt46";
    case LocalSidBehavior::end_probe:
      return "end_probe";
  }
  return "unknown";
}

const char* to_string(DecapStatus s) {
  return net::enum_name(kDecapStatusNames, s);
}

namespace {

using net::kEcnCe;
using net::kEcnEct0;
using net::kEcnEct1;
using net::kEcnNotEct;
using net::set_ipv4_ecn;
using net::set_ipv6_ecn;

#define SRV6GW_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define SRV6GW_LIKELY(x) __builtin_expect(!!(x), 1)

// RFC 6040 section 4.2 egress: the ECN field the inner header leaves with.
inline uint8_t egress_ecn(uint8_t inner, uint8_t outer) {
  if (outer == kEcnCe) return kEcnCe;  // caller drops the not-ECT case first
  if (outer == kEcnEct1 && inner == kEcnEct0) return kEcnEct1;
  return inner;
}

}  // namespace

namespace {

// decap() over `avail` contiguous bytes at `p` of a packet of `len` bytes. Split (a chain):
// every header read is checked against `avail` as well (headers_split); not split, avail ==
// len and the length checks already bound every read, so those checks compile away.
template <bool Split>
[[gnu::always_inline]] inline DecapStatus decap_at(uint8_t* p, size_t avail, size_t len,
                                                   LocalSidBehavior behavior, DecapResult& result) {
  result = DecapResult{};
  // Probes are reflected or handed to the prober, never decapsulated toward the host.
  if (SRV6GW_UNLIKELY(behavior == LocalSidBehavior::end_probe)) return DecapStatus::bad_next_header;
  const auto beyond = [avail](size_t end_of_read) { return Split && end_of_read > avail; };
  if (SRV6GW_UNLIKELY(len < net::kIpv6HeaderLen)) return DecapStatus::truncated_outer;
  if (SRV6GW_UNLIKELY(beyond(net::kIpv6HeaderLen))) return DecapStatus::headers_split;
  const uint32_t word0 = net::load_be32(p);
  if (SRV6GW_UNLIKELY((word0 >> 28) != 6)) return DecapStatus::not_ipv6;
  const size_t end = net::kIpv6HeaderLen + net::load_be16(p + 4);
  if (SRV6GW_UNLIKELY(end > len)) return DecapStatus::bad_outer_length;
  const uint8_t outer_ecn = uint8_t((word0 >> 20) & 0x3);
  result.outer_ecn = outer_ecn;

  uint8_t nh = p[6];
  size_t off = net::kIpv6HeaderLen;
  for (unsigned n = 0;; ++n) {
    if (!net::is_ipv6_ext_header(nh)) break;
    if (SRV6GW_UNLIKELY(n == net::kMaxExtHeaders)) return DecapStatus::ext_chain_too_long;
    if (SRV6GW_UNLIKELY(off + net::kExtMinLen > end)) return DecapStatus::truncated_ext;
    if (SRV6GW_UNLIKELY(beyond(off + net::kExtMinLen))) return DecapStatus::headers_split;
    const uint8_t* ext = p + off;
    if (nh == net::kProtoFragment) {
      // Only an atomic fragment (offset 0, M clear; RFC 6946) is a whole packet.
      if (SRV6GW_UNLIKELY((net::load_be16(ext + 2) & 0xFFF9) != 0))
        return DecapStatus::outer_fragment;
      nh = ext[0];
      off += net::kExtMinLen;
      continue;
    }
    const unsigned hdr_ext_len = ext[1];
    const size_t ext_len = (size_t(hdr_ext_len) + 1) * 8;
    if (SRV6GW_UNLIKELY(off + ext_len > end)) return DecapStatus::truncated_ext;
    if (nh == net::kProtoRouting) {
      const uint8_t segments_left = ext[3];
      if (ext[2] == net::kSrhRoutingType) {
        // RFC 8754: the segment list (last entry + 1 SIDs of 2 units each) must fit in the
        // header; TLVs may follow it, in any number of 8-octet units (an HMAC TLV is 40
        // bytes, so Hdr Ext Len may be odd); segments left indexes into the list.
        const unsigned entries = unsigned(ext[4]) + 1;
        if (SRV6GW_UNLIKELY(2 * entries > hdr_ext_len || segments_left > entries))
          return DecapStatus::srh_inconsistent;
        if (SRV6GW_UNLIKELY(segments_left != 0)) return DecapStatus::segments_left_nonzero;
        result.had_srh = true;
        result.srh_tag = net::load_be16(ext + 6);
      } else if (SRV6GW_UNLIKELY(segments_left != 0)) {
        // RFC 8200 4.4: an unrecognised routing type with segments left is not ours to skip.
        return DecapStatus::segments_left_nonzero;
      }
    }
    nh = ext[0];
    off += ext_len;
  }

  const bool want4 = behavior != LocalSidBehavior::end_dx6;
  const bool want6 = behavior != LocalSidBehavior::end_dx4;
  uint8_t* inner = p + off;
  size_t inner_len;
  uint8_t inner_ecn;
  if (nh == net::kProtoIpv4 && want4) {
    if (SRV6GW_UNLIKELY(off + net::kIpv4MinHeaderLen > end)) return DecapStatus::truncated_inner;
    if (SRV6GW_UNLIKELY(beyond(off + net::kIpv4MinHeaderLen))) return DecapStatus::headers_split;
    if (SRV6GW_UNLIKELY((inner[0] >> 4) != 4)) return DecapStatus::bad_next_header;
    const size_t ihl_bytes = size_t(inner[0] & 0xF) * 4;
    // The ECN rewrite updates the checksum over the whole header (options included).
    if (SRV6GW_UNLIKELY(beyond(off + ihl_bytes))) return DecapStatus::headers_split;
    inner_len = net::load_be16(inner + 2);
    if (SRV6GW_UNLIKELY(ihl_bytes < net::kIpv4MinHeaderLen || inner_len < ihl_bytes ||
                        off + inner_len > end))
      return DecapStatus::truncated_inner;
    inner_ecn = inner[1] & 0x3;
    result.inner_family = net::Family::ipv4;
  } else if (nh == net::kProtoIpv6 && want6) {
    if (SRV6GW_UNLIKELY(off + net::kIpv6HeaderLen > end)) return DecapStatus::truncated_inner;
    if (SRV6GW_UNLIKELY(beyond(off + net::kIpv6HeaderLen))) return DecapStatus::headers_split;
    if (SRV6GW_UNLIKELY((inner[0] >> 4) != 6)) return DecapStatus::bad_next_header;
    inner_len = net::kIpv6HeaderLen + net::load_be16(inner + 4);
    if (SRV6GW_UNLIKELY(off + inner_len > end)) return DecapStatus::truncated_inner;
    inner_ecn = (inner[1] >> 4) & 0x3;
    result.inner_family = net::Family::ipv6;
  } else {
    return DecapStatus::bad_next_header;
  }
  // off + inner_len <= end <= 40 + 65535 and inner_len >= 20 keep both in 16 bits except in
  // a corner no real frame reaches; refuse it rather than truncate the offsets.
  if (SRV6GW_UNLIKELY(off > 0xFFFF || inner_len > 0xFFFF)) return DecapStatus::truncated_inner;
  result.inner_offset = uint16_t(off);
  result.inner_len = uint16_t(inner_len);

  if (SRV6GW_UNLIKELY(outer_ecn == kEcnCe && inner_ecn == kEcnNotEct))
    return DecapStatus::ecn_ce_on_not_ect;
  const uint8_t new_ecn = egress_ecn(inner_ecn, outer_ecn);
  if (SRV6GW_UNLIKELY(new_ecn != inner_ecn)) {
    if (result.inner_family == net::Family::ipv4)
      set_ipv4_ecn(inner, new_ecn);
    else
      set_ipv6_ecn(inner, new_ecn);
    result.inner_marked_ce = new_ecn == kEcnCe;
  }
  return DecapStatus::ok;
}

// The packet nearly every peer sends, decapsulated without the walk: the outer header, at
// most one SRH (segments left 0, nothing after its list but TLVs), then an inner IPv4 header
// without options or an inner IPv6 header, whose ECN the egress rule leaves as it is. True
// with `result` exactly as decap_at gives it (status ok) when the packet is that; false, with
// nothing written to the packet, otherwise: decap_at decides. fuzz_decap compares the two on
// every input.
inline bool decap_common(uint8_t* p, size_t len, LocalSidBehavior behavior, DecapResult& result) {
  if (SRV6GW_UNLIKELY(len < net::kIpv6HeaderLen || behavior == LocalSidBehavior::end_probe))
    return false;
  const uint32_t word0 = net::load_be32(p);
  const size_t end = net::kIpv6HeaderLen + net::load_be16(p + 4);
  if (SRV6GW_UNLIKELY((word0 >> 28) != 6 || end > len)) return false;
  size_t off = net::kIpv6HeaderLen;
  uint8_t nh = p[6];
  bool had_srh = false;
  uint16_t tag = 0;
  if (nh == net::kProtoRouting) {
    if (end < off + net::kExtMinLen) return false;
    const uint8_t* srh = p + off;
    const size_t srh_len = (size_t(srh[1]) + 1) * 8;
    if (!(off + srh_len <= end && srh[2] == net::kSrhRoutingType && srh[3] == 0 &&
          2 * (unsigned(srh[4]) + 1) <= srh[1]))
      return false;
    had_srh = true;
    tag = net::load_be16(srh + 6);
    nh = srh[0];
    off += srh_len;
  }
  const uint8_t* inner = p + off;
  size_t inner_len;
  uint8_t inner_ecn;
  net::Family family;
  if (nh == net::kProtoIpv4 && behavior != LocalSidBehavior::end_dx6) {
    if (off + net::kIpv4MinHeaderLen > end || inner[0] != 0x45) return false;
    inner_len = net::load_be16(inner + 2);
    if (inner_len < net::kIpv4MinHeaderLen || off + inner_len > end) return false;
    inner_ecn = inner[1] & 0x3;
    family = net::Family::ipv4;
  } else if (nh == net::kProtoIpv6 && behavior != LocalSidBehavior::end_dx4) {
    if (off + net::kIpv6HeaderLen > end || (inner[0] >> 4) != 6) return false;
    inner_len = net::kIpv6HeaderLen + net::load_be16(inner + 4);
    if (off + inner_len > end) return false;
    inner_ecn = (inner[1] >> 4) & 0x3;
    family = net::Family::ipv6;
  } else {
    return false;
  }
  const uint8_t outer_ecn = uint8_t((word0 >> 20) & 0x3);
  // The egress rule changes nothing (no rewrite, no refusal) unless the outer is CE or is
  // ECT(1) over an ECT(0) inner.
  if (outer_ecn == kEcnCe || (outer_ecn == kEcnEct1 && inner_ecn == kEcnEct0)) return false;
  // off <= 40 + 2048 and inner_len <= 40 + 65535 fit the 16-bit fields but for the last
  // corner decap_at refuses: leave that to it.
  if (off > 0xFFFF || inner_len > 0xFFFF) return false;
  result = DecapResult{};
  result.inner_offset = uint16_t(off);
  result.inner_len = uint16_t(inner_len);
  result.inner_family = family;
  result.outer_ecn = outer_ecn;
  result.had_srh = had_srh;
  result.srh_tag = tag;
  return true;
}

}  // namespace

DecapStatus decap(std::span<uint8_t> outer, LocalSidBehavior behavior, DecapResult& result) {
  if (SRV6GW_LIKELY(decap_common(outer.data(), outer.size(), behavior, result)))
    return DecapStatus::ok;
  return decap_at<false>(outer.data(), outer.size(), outer.size(), behavior, result);
}

DecapStatus decap_general(std::span<uint8_t> outer, LocalSidBehavior behavior,
                          DecapResult& result) {
  return decap_at<false>(outer.data(), outer.size(), outer.size(), behavior, result);
}

DecapStatus decap(std::span<uint8_t> headers, size_t packet_len, LocalSidBehavior behavior,
                  DecapResult& result) {
  if (packet_len <= headers.size())
    return decap_at<false>(headers.data(), packet_len, packet_len, behavior, result);
  return decap_at<true>(headers.data(), headers.size(), packet_len, behavior, result);
}

}  // namespace srv6gw::srv6
