// SPDX-License-Identifier: BSD-3-Clause
#include "net/parse.hpp"

#include <cstring>

#include "net/bytes.hpp"
#include "net/hash.hpp"
#include "net/l2.hpp"

namespace srv6gw::net {

const char* to_string(ParseStatus s) {
  return enum_name(kParseStatusNames, s);
}

namespace {

#define SRV6GW_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define SRV6GW_LIKELY(x) __builtin_expect(!!(x), 1)

// Writes an IPv4 address as one 16-byte store (zero upper bytes): a 16-byte read of the
// address right after (steering key, flow hash) is then forwarded from the store buffer
// instead of stalling on a 4-byte store followed by stale upper bytes.
inline void store_ipv4_addr(IpAddr& a, const uint8_t* p) {
  typedef uint32_t U32x4 __attribute__((vector_size(16)));
  uint32_t word;
  std::memcpy(&word, p, 4);
  const U32x4 v = {word, 0, 0, 0};
  a.family = Family::ipv4;
  std::memcpy(a.bytes.data(), &v, 16);
}

// Fills the BTH record and is_cnp from the BTH at `b`: the opcode and DestQP the data plane
// reads, and the header's bytes for the other fields. Everything is loaded before the first
// store: stores into `info` may alias the frame (uint8_t), which would otherwise force
// reloads after every store.
inline void store_bth(const uint8_t* b, PacketInfo& info) {
  uint8_t bytes[kBthLen];
  std::memcpy(bytes, b, kBthLen);
  const uint32_t w1 = load_be32(bytes + 4);
  Bth& bth = info.bth;
  std::memcpy(bth.bytes, bytes, kBthLen);
  bth.opcode = bytes[0];
  bth.dest_qp = w1 & 0xFFFFFF;
  info.is_cnp = bytes[0] == kBthOpcodeCnp;
}

// UDP header at `l4`, IP payload ends at `l3_end` (not the frame end: Ethernet padding
// may follow). Then the BTH when the destination port is RoCEv2's.
inline ParseStatus parse_udp_bth(const uint8_t* p, size_t l4, size_t l3_end, PacketInfo& info) {
  if (SRV6GW_UNLIKELY(l4 + kUdpHeaderLen > l3_end)) return ParseStatus::truncated_udp;
  const uint8_t* udp = p + l4;
  const uint16_t udp_len = load_be16(udp + 4);
  info.udp_sport = load_be16(udp);
  info.udp_dport = load_be16(udp + 2);
  if (SRV6GW_UNLIKELY(udp_len < kUdpHeaderLen || l4 + udp_len > l3_end))
    return ParseStatus::bad_udp_length;
  if (info.udp_dport != kRoceV2Port) return ParseStatus::not_roce;
  if (SRV6GW_UNLIKELY(udp_len < kUdpHeaderLen + kBthLen + kIcrcLen))
    return ParseStatus::truncated_bth;

  const size_t bth_off = l4 + kUdpHeaderLen;
  info.bth_offset = uint16_t(bth_off);
  store_bth(p + bth_off, info);
  if (SRV6GW_UNLIKELY(info.bth.tver() != 0)) return ParseStatus::bad_bth_tver;
  return ParseStatus::ok;
}

inline ParseStatus parse_ipv4_at(const uint8_t* p, size_t l3, size_t frame_len, PacketInfo& info) {
  info.family = Family::ipv4;
  if (SRV6GW_UNLIKELY(l3 + kIpv4MinHeaderLen > frame_len)) return ParseStatus::truncated_ipv4;
  const uint8_t* ip = p + l3;
  if (SRV6GW_UNLIKELY((ip[0] >> 4) != 4)) return ParseStatus::bad_ipv4_version;
  const size_t ihl_bytes = size_t(ip[0] & 0xF) * 4;
  if (SRV6GW_UNLIKELY(ihl_bytes < kIpv4MinHeaderLen)) return ParseStatus::bad_ipv4_ihl;
  if (SRV6GW_UNLIKELY(l3 + ihl_bytes > frame_len)) return ParseStatus::truncated_ipv4;
  const uint16_t total_len = load_be16(ip + 2);
  if (SRV6GW_UNLIKELY(total_len < ihl_bytes || l3 + total_len > frame_len))
    return ParseStatus::bad_ipv4_length;

  info.l3_len = total_len;
  info.dscp = uint8_t(ip[1] >> 2);
  info.ecn = uint8_t(ip[1] & 0x3);
  info.ttl = ip[8];
  info.l4_proto = ip[9];
  info.has_ip_options = ihl_bytes > kIpv4MinHeaderLen;
  info.ipv6_flow_label = 0;
  store_ipv4_addr(info.src, ip + 12);
  store_ipv4_addr(info.dst, ip + 16);

  // MF set or a non-zero fragment offset; DF (0x4000) alone is the RoCEv2 norm.
  if (SRV6GW_UNLIKELY((load_be16(ip + 6) & 0x3FFF) != 0)) {
    info.fragment = true;
    return ParseStatus::fragment;
  }
  info.fragment = false;
  if (SRV6GW_UNLIKELY(info.l4_proto != kProtoUdp)) return ParseStatus::not_udp;
  const size_t l4 = l3 + ihl_bytes;
  info.l4_offset = uint16_t(l4);
  return parse_udp_bth(p, l4, l3 + total_len, info);
}

inline ParseStatus parse_ipv6_at(const uint8_t* p, size_t l3, size_t frame_len, PacketInfo& info) {
  info.family = Family::ipv6;
  if (SRV6GW_UNLIKELY(l3 + net::kIpv6HeaderLen > frame_len)) return ParseStatus::truncated_ipv6;
  const uint8_t* ip = p + l3;
  const uint32_t word0 = load_be32(ip);
  if (SRV6GW_UNLIKELY((word0 >> 28) != 6)) return ParseStatus::bad_ipv6_version;
  const size_t l3_len = net::kIpv6HeaderLen + load_be16(ip + 4);
  // l3_len is a 16-bit field of PacketInfo; no link we serve carries such frames anyway.
  if (SRV6GW_UNLIKELY(l3 + l3_len > frame_len || l3_len > kMaxL3Len))
    return ParseStatus::bad_ipv6_length;

  info.l3_len = uint16_t(l3_len);
  const uint8_t tc = uint8_t(word0 >> 20);
  info.dscp = uint8_t(tc >> 2);
  info.ecn = uint8_t(tc & 0x3);
  info.ipv6_flow_label = word0 & 0xFFFFF;
  info.has_ip_options = false;
  info.fragment = false;
  info.ttl = ip[7];
  info.src.family = Family::ipv6;
  info.dst.family = Family::ipv6;
  std::memcpy(info.src.bytes.data(), ip + 8, 16);
  std::memcpy(info.dst.bytes.data(), ip + 24, 16);

  uint8_t nh = ip[6];
  size_t off = l3 + net::kIpv6HeaderLen;
  const size_t end = l3 + l3_len;
  // Bounded walk: hop-by-hop, routing (incl. SRH), destination options, fragment.
  for (unsigned n = 0;; ++n) {
    if (SRV6GW_LIKELY(!is_ipv6_ext_header(nh))) break;
    if (SRV6GW_UNLIKELY(n == kMaxExtHeaders)) {
      info.l4_proto = nh;
      return ParseStatus::ext_chain_too_long;
    }
    if (SRV6GW_UNLIKELY(off + kExtMinLen > end)) return ParseStatus::truncated_ext;
    const uint8_t* ext = p + off;
    if (nh == kProtoFragment) {
      // Offset or M set: a real fragment. An atomic fragment (RFC 6946) is a whole packet.
      if ((load_be16(ext + 2) & 0xFFF9) != 0) {
        info.l4_proto = ext[0];
        info.fragment = true;
        return ParseStatus::fragment;
      }
      nh = ext[0];
      off += kExtMinLen;
      continue;
    }
    const size_t len = (size_t(ext[1]) + 1) * 8;
    if (SRV6GW_UNLIKELY(off + len > end)) return ParseStatus::truncated_ext;
    nh = ext[0];
    off += len;
  }
  info.l4_proto = nh;
  if (SRV6GW_UNLIKELY(nh != kProtoUdp)) return ParseStatus::not_udp;
  info.l4_offset = uint16_t(off);
  return parse_udp_bth(p, off, end, info);
}

}  // namespace

namespace {

// parse_frame() without clearing `info` first: on ok every field of PacketInfo is written
// (the per-packet clear of the whole record was a `rep stos` in the data plane's profile).
// On any other status the fields are partly written, partly stale.
inline ParseStatus parse_frame_fields(const uint8_t* p, size_t len, PacketInfo& info) {
  info.vlan_count = 0;
  std::memset(info.vlan_tci, 0, sizeof info.vlan_tci);
  std::memset(info.vlan_tpid, 0, sizeof info.vlan_tpid);
  L2Header l2;
  const ParseStatus l2_status =
      walk_l2(p, len, l2, [&info](unsigned index, uint16_t tpid, uint16_t tci) {
        info.vlan_tpid[index] = tpid;
        info.vlan_tci[index] = tci;
        info.vlan_count = uint8_t(index + 1);
      });
  if (SRV6GW_UNLIKELY(l2_status != ParseStatus::ok)) return l2_status;
  const uint16_t ethertype = l2.ethertype;
  const size_t l3 = l2.l3_offset;
  info.l3_offset = l2.l3_offset;
  if (SRV6GW_LIKELY(ethertype == kEthTypeIpv4)) return parse_ipv4_at(p, l3, len, info);
  if (ethertype == kEthTypeIpv6) return parse_ipv6_at(p, l3, len, info);
  return ParseStatus::not_ip;
}

// Every status but ok: parse again into a cleared record, so that the fields up to the
// failing layer are set and all others are zero, as documented. Deterministic, so the
// status is the same; the cost is only paid by non-RoCE and broken frames.
[[gnu::noinline, gnu::cold]] ParseStatus parse_frame_cleared(const uint8_t* p, size_t len,
                                                             PacketInfo& info) {
  info = PacketInfo{};
  return parse_frame_fields(p, len, info);
}

// The frame nearly every RoCEv2 host sends: untagged Ethernet, IPv4 without options and not
// fragmented, UDP to port 4791, a BTH of version 0. True when the frame is exactly that and
// passes every check parse_frame_fields makes on that way (then `info` holds the same fields
// it would: tests and fuzz_parse compare the two); false otherwise, with `info` partly
// written, and the general walk decides. One branch for all the checks: they are computed
// as one mask from a few loads of the first 58 bytes.
inline bool parse_common_ipv4_roce(const uint8_t* p, size_t len, PacketInfo& info) {
  constexpr size_t l3 = kEthHeaderLen;
  constexpr size_t l4 = l3 + kIpv4MinHeaderLen;
  constexpr size_t bth_off = l4 + kUdpHeaderLen;
  constexpr size_t kMinLen = bth_off + kBthLen + kIcrcLen;  // 58
  if (SRV6GW_UNLIKELY(len < kMinLen)) return false;
  const uint8_t* ip = p + l3;
  const uint8_t* udp = p + l4;
  const uint32_t type_vhl = load_be32(p + 12) >> 8;  // ethertype, version | IHL
  const uint16_t total_len = load_be16(ip + 2);
  const uint16_t frag = load_be16(ip + 6);
  const uint16_t udp_len = load_be16(udp + 4);
  const uint16_t dport = load_be16(udp + 2);
  const uint32_t w0 = load_be32(p + bth_off);
  // total_len >= 20 + udp_len keeps the UDP datagram inside the IP packet; udp_len >= 24
  // holds the BTH and ICRC; the frame holds the IP packet.
  const bool common = (type_vhl == (uint32_t(kEthTypeIpv4) << 8 | 0x45)) & ((frag & 0x3FFF) == 0) &
                      (ip[9] == kProtoUdp) & (dport == kRoceV2Port) &
                      (udp_len >= kUdpHeaderLen + kBthLen + kIcrcLen) &
                      (size_t(total_len) >= kIpv4MinHeaderLen + size_t(udp_len)) &
                      (l3 + size_t(total_len) <= len) & (((w0 >> 16) & 0xF) == 0);
  if (SRV6GW_UNLIKELY(!common)) return false;
  // Every frame byte is loaded before the first store into `info` (which may alias it).
  const uint8_t tos = ip[1];
  const uint8_t ttl = ip[8];
  const uint16_t sport = load_be16(udp);
  store_ipv4_addr(info.src, ip + 12);
  store_ipv4_addr(info.dst, ip + 16);
  info.family = Family::ipv4;
  info.vlan_count = 0;
  std::memset(info.vlan_tci, 0, sizeof info.vlan_tci);
  std::memset(info.vlan_tpid, 0, sizeof info.vlan_tpid);
  info.l3_offset = uint16_t(l3);
  info.l3_len = total_len;
  info.l4_offset = uint16_t(l4);
  info.bth_offset = uint16_t(bth_off);
  info.l4_proto = kProtoUdp;
  info.dscp = uint8_t(tos >> 2);
  info.ecn = uint8_t(tos & 0x3);
  info.ttl = ttl;
  info.ipv6_flow_label = 0;
  info.has_ip_options = false;
  info.fragment = false;
  info.udp_sport = sport;
  info.udp_dport = kRoceV2Port;
  store_bth(p + bth_off, info);
  return true;
}

}  // namespace

ParseStatus parse_frame(std::span<const uint8_t> frame, PacketInfo& info) {
  if (SRV6GW_LIKELY(parse_common_ipv4_roce(frame.data(), frame.size(), info)))
    return ParseStatus::ok;
  return parse_frame_general(frame, info);
}

ParseStatus parse_frame_general(std::span<const uint8_t> frame, PacketInfo& info) {
  const ParseStatus st = parse_frame_fields(frame.data(), frame.size(), info);
  if (SRV6GW_LIKELY(st == ParseStatus::ok)) return st;
  return parse_frame_cleared(frame.data(), frame.size(), info);
}

namespace {

// parse_ip() without clearing `info` first, as parse_frame_fields: on ok every field is
// written (the IP walk writes all but the L2 fields, set here).
inline ParseStatus parse_ip_fields(const uint8_t* p, size_t len, Family family, PacketInfo& info) {
  info.vlan_count = 0;
  std::memset(info.vlan_tci, 0, sizeof info.vlan_tci);
  std::memset(info.vlan_tpid, 0, sizeof info.vlan_tpid);
  info.l3_offset = 0;
  if (SRV6GW_LIKELY(family == Family::ipv4)) return parse_ipv4_at(p, 0, len, info);
  if (family == Family::ipv6) return parse_ipv6_at(p, 0, len, info);
  return ParseStatus::not_ip;
}

}  // namespace

ParseStatus parse_ip(std::span<const uint8_t> packet, Family family, PacketInfo& info) {
  const ParseStatus st = parse_ip_fields(packet.data(), packet.size(), family, info);
  if (SRV6GW_LIKELY(st == ParseStatus::ok)) return st;
  // As parse_frame_general: the fields up to the failing layer set, all others zero.
  info = PacketInfo{};
  return parse_ip_fields(packet.data(), packet.size(), family, info);
}

uint32_t outer_flow_label(const PacketInfo& info) {
  return outer_flow_label_from_pair_crc(crc32c_pair(info.src.bytes.data(), info.dst.bytes.data()),
                                        info.udp_sport, info.bth.dest_qp);
}

}  // namespace srv6gw::net
