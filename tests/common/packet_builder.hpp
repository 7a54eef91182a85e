// SPDX-License-Identifier: BSD-3-Clause
// Hand-built test packets, byte by byte in network order, written from the RFCs / the IBTA
// layout and independent of the code under test (no include of lib/ code). The low layer
// writes every field (parser and fuzz tests); the frame layer below it builds a whole RoCEv2
// or SRv6 frame from a few fields (data plane and engine tests).
#pragma once

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

namespace srv6gw::test {

using Bytes = std::vector<uint8_t>;

inline void put8(Bytes& b, uint8_t v) {
  b.push_back(v);
}
inline void put16(Bytes& b, uint16_t v) {
  b.push_back(uint8_t(v >> 8));
  b.push_back(uint8_t(v));
}
inline void put24(Bytes& b, uint32_t v) {
  b.push_back(uint8_t(v >> 16));
  b.push_back(uint8_t(v >> 8));
  b.push_back(uint8_t(v));
}
inline void put32(Bytes& b, uint32_t v) {
  put16(b, uint16_t(v >> 16));
  put16(b, uint16_t(v));
}
inline void append(Bytes& b, std::span<const uint8_t> s) {
  b.insert(b.end(), s.begin(), s.end());
}
inline Bytes concat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) append(out, p);
  return out;
}

// RFC 1071 Internet checksum over a buffer (full computation, the reference).
inline uint16_t inet_checksum(std::span<const uint8_t> b) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < b.size(); i += 2) sum += uint32_t(b[i]) << 8 | b[i + 1];
  if (b.size() & 1) sum += uint32_t(b.back()) << 8;
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return uint16_t(~sum);
}

using V4 = std::array<uint8_t, 4>;
using V6 = std::array<uint8_t, 16>;

inline V6 v6(std::initializer_list<uint16_t> groups_prefix, uint16_t last = 0) {
  V6 a{};
  size_t i = 0;
  for (uint16_t g : groups_prefix) {
    a[i++] = uint8_t(g >> 8);
    a[i++] = uint8_t(g);
  }
  a[14] = uint8_t(a[14] | (last >> 8));
  a[15] = uint8_t(a[15] | last);
  return a;
}

struct BthFields {
  uint8_t opcode = 0x04;  // RC SEND only
  uint8_t byte1 = 0x00;   // SE | M | PadCnt(2) | TVer(4)
  uint16_t pkey = 0xFFFF;
  uint8_t byte4 = 0x00;  // FECN | BECN | resv6
  uint32_t dest_qp = 0x000123;
  uint8_t byte8 = 0x00;  // A | resv7
  uint32_t psn = 0x000456;
};

inline Bytes bth(const BthFields& f) {
  Bytes b;
  put8(b, f.opcode);
  put8(b, f.byte1);
  put16(b, f.pkey);
  put8(b, f.byte4);
  put24(b, f.dest_qp);
  put8(b, f.byte8);
  put24(b, f.psn);
  return b;
}

// UDP header + BTH + payload + 4-byte ICRC placeholder (zeros). `udp_len_override` != 0
// writes that value instead of the true length.
inline Bytes udp_roce(uint16_t sport, uint16_t dport, const BthFields& f, size_t payload_len,
                      uint16_t udp_len_override = 0) {
  Bytes body = bth(f);
  for (size_t i = 0; i < payload_len; ++i) body.push_back(uint8_t(i * 7 + 1));
  for (int i = 0; i < 4; ++i) body.push_back(0);
  Bytes u;
  put16(u, sport);
  put16(u, dport);
  put16(u, udp_len_override ? udp_len_override : uint16_t(8 + body.size()));
  put16(u, 0);  // checksum: RoCEv2 senders leave it 0
  append(u, body);
  return u;
}

struct Ipv4Fields {
  uint8_t version_ihl = 0x45;
  uint8_t tos = 0x00;
  uint16_t id = 0x1234;
  uint16_t flags_frag = 0x4000;  // DF
  uint8_t ttl = 64;
  uint8_t proto = 17;
  V4 src{10, 0, 0, 1};
  V4 dst{10, 0, 0, 2};
  uint16_t total_len_override = 0;
};

// IPv4 header (with options of (IHL-5)*4 bytes of NOPs) + payload, correct checksum.
inline Bytes ipv4(const Ipv4Fields& f, const Bytes& payload) {
  const size_t ihl_bytes = size_t(f.version_ihl & 0xF) * 4;
  const size_t hdr_len = ihl_bytes < 20 ? 20 : ihl_bytes;
  Bytes b;
  put8(b, f.version_ihl);
  put8(b, f.tos);
  put16(b, f.total_len_override ? f.total_len_override : uint16_t(hdr_len + payload.size()));
  put16(b, f.id);
  put16(b, f.flags_frag);
  put8(b, f.ttl);
  put8(b, f.proto);
  put16(b, 0);
  b.insert(b.end(), f.src.begin(), f.src.end());
  b.insert(b.end(), f.dst.begin(), f.dst.end());
  while (b.size() < hdr_len) b.push_back(0x01);  // NOP options
  const uint16_t c = inet_checksum(std::span(b.data(), hdr_len));
  b[10] = uint8_t(c >> 8);
  b[11] = uint8_t(c);
  append(b, payload);
  return b;
}

struct Ipv6Fields {
  uint8_t tc = 0x00;
  uint32_t flow_label = 0;
  uint8_t next_header = 17;
  uint8_t hop_limit = 64;
  V6 src = v6({0xfd00}, 1);
  V6 dst = v6({0xfd00}, 2);
  uint8_t version = 6;
  int32_t payload_len_override = -1;
};

inline Bytes ipv6(const Ipv6Fields& f, const Bytes& payload) {
  Bytes b;
  put32(b, uint32_t(f.version) << 28 | uint32_t(f.tc) << 20 | (f.flow_label & 0xFFFFF));
  put16(b,
        f.payload_len_override >= 0 ? uint16_t(f.payload_len_override) : uint16_t(payload.size()));
  put8(b, f.next_header);
  put8(b, f.hop_limit);
  b.insert(b.end(), f.src.begin(), f.src.end());
  b.insert(b.end(), f.dst.begin(), f.dst.end());
  append(b, payload);
  return b;
}

// Generic extension header (hop-by-hop / destination options) of (units+1)*8 bytes, PadN.
inline Bytes ext_opts(uint8_t next_header, uint8_t units = 0) {
  Bytes b;
  put8(b, next_header);
  put8(b, units);
  const size_t len = (size_t(units) + 1) * 8;
  put8(b, 1);  // PadN
  put8(b, uint8_t(len - 4));
  while (b.size() < len) b.push_back(0);
  return b;
}

inline Bytes fragment_hdr(uint8_t next_header, uint16_t offset_units, bool more,
                          uint32_t id = 0xABCD) {
  Bytes b;
  put8(b, next_header);
  put8(b, 0);
  put16(b, uint16_t(offset_units << 3 | (more ? 1 : 0)));
  put32(b, id);
  return b;
}

// Routing header with a segment list (SRH layout when type 4). `hdr_ext_len` < 0 means the
// consistent value 2*len(segments) + tlv.size()/8.
inline Bytes routing_hdr(uint8_t next_header, uint8_t type, uint8_t segments_left,
                         uint8_t last_entry, uint16_t tag, const std::vector<V6>& segments,
                         const Bytes& tlvs = {}, int hdr_ext_len = -1, uint8_t flags = 0) {
  Bytes b;
  put8(b, next_header);
  put8(b, hdr_ext_len >= 0 ? uint8_t(hdr_ext_len) : uint8_t(2 * segments.size() + tlvs.size() / 8));
  put8(b, type);
  put8(b, segments_left);
  put8(b, last_entry);
  put8(b, flags);
  put16(b, tag);
  for (const V6& s : segments) b.insert(b.end(), s.begin(), s.end());
  append(b, tlvs);
  return b;
}

using Mac = std::array<uint8_t, 6>;
inline constexpr Mac kDefaultDstMac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
inline constexpr Mac kDefaultSrcMac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};

// Ethernet header (+ VLAN tags, outermost first) + payload, zero-padded to `pad_to` bytes.
inline Bytes ethernet(const Mac& dst, const Mac& src, uint16_t ethertype, const Bytes& payload,
                      const std::vector<std::pair<uint16_t, uint16_t>>& tags = {},
                      size_t pad_to = 0) {
  Bytes b(dst.begin(), dst.end());
  b.insert(b.end(), src.begin(), src.end());
  for (auto [tpid, tci] : tags) {
    put16(b, tpid);
    put16(b, tci);
  }
  put16(b, ethertype);
  append(b, payload);
  while (b.size() < pad_to) b.push_back(0);
  return b;
}

inline Bytes ethernet(uint16_t ethertype, const Bytes& payload,
                      const std::vector<std::pair<uint16_t, uint16_t>>& tags = {}) {
  return ethernet(kDefaultDstMac, kDefaultSrcMac, ethertype, payload, tags);
}

// ---- Whole frames from a few fields (the data plane and engine tests) ----

// Text address ("10.0.0.1", "fc00::1") to bytes; 4 bytes for IPv4, 16 for IPv6.
inline Bytes addr(const char* text) {
  Bytes b(16);
  if (inet_pton(AF_INET, text, b.data()) == 1) {
    b.resize(4);
    return b;
  }
  if (inet_pton(AF_INET6, text, b.data()) != 1) throw std::invalid_argument(text);
  return b;
}
inline V6 v6(const char* text) {
  const Bytes b = addr(text);
  if (b.size() != 16) throw std::invalid_argument(text);
  V6 a;
  std::copy(b.begin(), b.end(), a.begin());
  return a;
}

struct RoceSpec {
  const char* src = "10.0.0.1";
  const char* dst = "10.0.1.1";  // IPv4 or IPv6 by this address
  uint8_t dscp = 0;
  uint8_t ecn = 0;
  uint8_t ttl = 64;
  uint16_t sport = 49152;
  uint8_t opcode = 0x0a;  // RDMA WRITE only
  uint32_t dest_qp = 0x123;
  uint32_t psn = 1;
  size_t payload = 64;       // bytes after the BTH, before the ICRC
  uint32_t payload_tag = 0;  // written into the first four payload bytes (sequence numbers)
};

// The IP packet with UDP 4791, BTH (AckReq set), payload and a zero ICRC field (nothing
// here checks it).
inline Bytes roce_ip_packet(const RoceSpec& s) {
  BthFields f;
  f.opcode = s.opcode;
  f.dest_qp = s.dest_qp;
  f.byte8 = 0x80;  // AckReq
  f.psn = s.psn;
  Bytes l4 = bth(f);
  for (size_t i = 0; i < s.payload; ++i) l4.push_back(uint8_t(i * 7));
  if (s.payload >= 4) {
    const size_t at = l4.size() - s.payload;
    for (int i = 0; i < 4; ++i) l4[at + size_t(i)] = uint8_t(s.payload_tag >> (24 - 8 * i));
  }
  put32(l4, 0);  // ICRC
  Bytes udp;
  put16(udp, s.sport);
  put16(udp, 4791);
  put16(udp, uint16_t(8 + l4.size()));
  put16(udp, 0);
  append(udp, l4);
  const Bytes src = addr(s.src), dst = addr(s.dst);
  const uint8_t tos = uint8_t(s.dscp << 2 | s.ecn);
  if (dst.size() == 4) {
    Ipv4Fields h;
    h.tos = tos;
    h.ttl = s.ttl;
    std::copy(src.begin(), src.end(), h.src.begin());
    std::copy(dst.begin(), dst.end(), h.dst.begin());
    return ipv4(h, udp);
  }
  Ipv6Fields h;
  h.tc = tos;
  h.flow_label = 0x12345;
  h.hop_limit = s.ttl;
  std::copy(src.begin(), src.end(), h.src.begin());
  std::copy(dst.begin(), dst.end(), h.dst.begin());
  return ipv6(h, udp);
}

struct L2Spec {
  Mac dst = {0x02, 0x00, 0x00, 0x00, 0x00, 0xaa};
  Mac src = {0x02, 0x00, 0x00, 0x00, 0x00, 0xbb};
  std::vector<std::pair<uint16_t, uint16_t>> tags;  // (TPID, TCI), outermost first
};

inline Bytes ethernet(const L2Spec& l2, uint16_t ethertype, const Bytes& payload,
                      size_t pad_to = 0) {
  return ethernet(l2.dst, l2.src, ethertype, payload, l2.tags, pad_to);
}

inline Bytes roce_frame(const RoceSpec& s, const L2Spec& l2 = {}) {
  return ethernet(l2, addr(s.dst).size() == 4 ? 0x0800 : 0x86DD, roce_ip_packet(s));
}

// Outer IPv6 (+ SRH with segments left 0 when `srh_sids` is not empty) around `inner`.
inline Bytes srv6_packet(const char* outer_src, const char* outer_dst, uint8_t outer_tc,
                         const std::vector<const char*>& srh_sids, uint16_t tag,
                         uint8_t inner_proto, const Bytes& inner) {
  Bytes body;
  if (!srh_sids.empty()) {
    // Segment list in reverse order: [0] is the last segment (our SID).
    std::vector<V6> segments;
    for (auto it = srh_sids.rbegin(); it != srh_sids.rend(); ++it) segments.push_back(v6(*it));
    body = routing_hdr(inner_proto, 4, 0, uint8_t(srh_sids.size() - 1), tag, segments);
  }
  append(body, inner);
  Ipv6Fields h;
  h.tc = outer_tc;
  h.flow_label = 0xabcde;
  h.next_header = srh_sids.empty() ? inner_proto : 43;
  h.hop_limit = 60;
  h.src = v6(outer_src);
  h.dst = v6(outer_dst);
  return ipv6(h, body);
}

}  // namespace srv6gw::test
