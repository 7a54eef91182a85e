// SPDX-License-Identifier: BSD-3-Clause
// Hand-built test frames (RoCEv2 over IPv4/IPv6 with optional VLAN tags, SRv6-encapsulated
// frames for the decap direction) written field by field from the RFCs, independent of the
// parser and encapsulation code under test.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "../policy/config_builder.hpp"

namespace srv6gw::testing {

using Bytes = std::vector<uint8_t>;

inline void put16(Bytes& b, uint16_t v) {
  b.push_back(uint8_t(v >> 8));
  b.push_back(uint8_t(v));
}
inline void put32(Bytes& b, uint32_t v) {
  put16(b, uint16_t(v >> 16));
  put16(b, uint16_t(v));
}
inline void put_bytes(Bytes& b, const uint8_t* p, size_t n) {
  b.insert(b.end(), p, p + n);
}

inline uint16_t ipv4_checksum(const uint8_t* h, size_t len) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < len; i += 2) sum += uint32_t(h[i]) << 8 | h[i + 1];
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return uint16_t(~sum);
}

struct RoceSpec {
  const char* src = "10.0.0.1";
  const char* dst = "10.0.1.1";
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

// The IP packet (IPv4 or IPv6 by the address family of spec.dst) with UDP 4791, BTH,
// payload and a 4-byte ICRC field (zero: nothing here checks it).
inline Bytes roce_ip_packet(const RoceSpec& s) {
  const net::IpAddr src = ip(s.src), dst = ip(s.dst);
  const size_t udp_len = 8 + 12 + s.payload + 4;
  Bytes b;
  if (dst.family == net::Family::ipv4) {
    const size_t total = 20 + udp_len;
    b.push_back(0x45);
    b.push_back(uint8_t(s.dscp << 2 | s.ecn));
    put16(b, uint16_t(total));
    put16(b, 0x1234);  // identification
    put16(b, 0x4000);  // DF
    b.push_back(s.ttl);
    b.push_back(17);
    put16(b, 0);
    put_bytes(b, src.bytes.data(), 4);
    put_bytes(b, dst.bytes.data(), 4);
    const uint16_t c = ipv4_checksum(b.data(), 20);
    b[10] = uint8_t(c >> 8);
    b[11] = uint8_t(c);
  } else {
    const uint32_t tc = uint32_t(s.dscp << 2 | s.ecn);
    put32(b, 6u << 28 | tc << 20 | 0x12345);
    put16(b, uint16_t(udp_len));
    b.push_back(17);
    b.push_back(s.ttl);
    put_bytes(b, src.bytes.data(), 16);
    put_bytes(b, dst.bytes.data(), 16);
  }
  put16(b, s.sport);
  put16(b, 4791);
  put16(b, uint16_t(udp_len));
  put16(b, 0);  // UDP checksum
  // BTH: opcode, SE/M/pad/tver, P_Key, FECN/BECN/resv, DestQP, A/resv, PSN.
  b.push_back(s.opcode);
  b.push_back(0x00);
  put16(b, 0xFFFF);
  b.push_back(0x00);
  b.push_back(uint8_t(s.dest_qp >> 16));
  put16(b, uint16_t(s.dest_qp));
  b.push_back(0x80);  // AckReq
  b.push_back(uint8_t(s.psn >> 16));
  put16(b, uint16_t(s.psn));
  for (size_t i = 0; i < s.payload; ++i) b.push_back(uint8_t(i * 7));
  if (s.payload >= 4) {
    const size_t at = b.size() - s.payload;
    b[at] = uint8_t(s.payload_tag >> 24);
    b[at + 1] = uint8_t(s.payload_tag >> 16);
    b[at + 2] = uint8_t(s.payload_tag >> 8);
    b[at + 3] = uint8_t(s.payload_tag);
  }
  put32(b, 0);  // ICRC
  return b;
}

struct L2Spec {
  net::MacAddr dst = mac("02:00:00:00:00:aa");
  net::MacAddr src = mac("02:00:00:00:00:bb");
  std::vector<uint16_t> vlan_tpids;  // outermost first, e.g. {0x88A8, 0x8100}
  std::vector<uint16_t> vlan_tcis;
};

inline Bytes ethernet(const L2Spec& l2, uint16_t ethertype, const Bytes& payload,
                      size_t pad_to = 0) {
  Bytes b;
  put_bytes(b, l2.dst.bytes.data(), 6);
  put_bytes(b, l2.src.bytes.data(), 6);
  for (size_t i = 0; i < l2.vlan_tpids.size(); ++i) {
    put16(b, l2.vlan_tpids[i]);
    put16(b, l2.vlan_tcis[i]);
  }
  put16(b, ethertype);
  b.insert(b.end(), payload.begin(), payload.end());
  while (b.size() < pad_to) b.push_back(0);
  return b;
}

inline Bytes roce_frame(const RoceSpec& s, const L2Spec& l2 = {}) {
  const bool v4 = ip(s.dst).family == net::Family::ipv4;
  return ethernet(l2, v4 ? 0x0800 : 0x86DD, roce_ip_packet(s));
}

// Outer IPv6 (+ SRH with segments left 0 when `sids` is not empty) around `inner`.
inline Bytes srv6_packet(const char* outer_src, const char* outer_dst, uint8_t outer_tc,
                         const std::vector<const char*>& srh_sids, uint16_t tag,
                         uint8_t inner_proto, const Bytes& inner) {
  Bytes b;
  const size_t srh_len = srh_sids.empty() ? 0 : 8 + 16 * srh_sids.size();
  put32(b, 6u << 28 | uint32_t(outer_tc) << 20 | 0xabcde);
  put16(b, uint16_t(srh_len + inner.size()));
  b.push_back(srh_sids.empty() ? inner_proto : 43);
  b.push_back(60);
  put_bytes(b, v6(outer_src).bytes.data(), 16);
  put_bytes(b, v6(outer_dst).bytes.data(), 16);
  if (!srh_sids.empty()) {
    b.push_back(inner_proto);
    b.push_back(uint8_t(2 * srh_sids.size()));
    b.push_back(4);                             // routing type SRH
    b.push_back(0);                             // segments left
    b.push_back(uint8_t(srh_sids.size() - 1));  // last entry
    b.push_back(0);                             // flags
    put16(b, tag);
    // Segment list in reverse order: [0] is the last segment (our SID).
    for (auto it = srh_sids.rbegin(); it != srh_sids.rend(); ++it)
      put_bytes(b, v6(*it).bytes.data(), 16);
  }
  b.insert(b.end(), inner.begin(), inner.end());
  return b;
}

}  // namespace srv6gw::testing
