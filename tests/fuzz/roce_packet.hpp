// SPDX-License-Identifier: BSD-3-Clause
// Builds a well-formed RoCEv2 packet (IPv4 or IPv6, starting at the IP header) from fuzzer
// bytes, byte by byte from the RFC / IBTA layouts (tests/common/packet_builder.hpp): every header
// field the fuzzer may vary (ToS/traffic class, TTL, flow label, addresses, IPv4 options, an IPv6
// destination-options header, UDP source port, the BTH, payload length and content) comes from the
// input; the lengths and the checksum are computed; the ICRC is filled in by the code under test
// and then verified by the caller. Input layout: flags (bit 0 IPv6, bit 1 IPv4 options / IPv6
// destination options), ToS or traffic class, TTL, flow label (4), IPv4 id (2), UDP source port
// (2), BTH (12; TVer forced to 0), source (16), destination (16; IPv4 uses the first 4 bytes of
// each), the number of IPv4 option words when bit 1 is set, then the payload (the rest, up to
// `max_payload`).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "fuzz_util.hpp"
#include "net/addr.hpp"
#include "net/icrc.hpp"
#include "packet_builder.hpp"

namespace srv6gw::fuzz {

struct RocePacket {
  net::Family family = net::Family::ipv4;
  std::vector<uint8_t> bytes;  // the IP packet, ICRC included
  uint8_t traffic_class = 0;   // DSCP<<2 | ECN as written
  uint16_t udp_sport = 0;
  uint8_t opcode = 0;
  uint32_t dest_qp = 0;
  uint32_t psn = 0;
};

// `max_payload` bounds the BTH payload so that packet + encapsulation stay within 16 bits.
inline RocePacket make_roce_packet(ByteReader& in, size_t max_payload) {
  RocePacket pkt;
  const uint8_t flags = in.u8();
  pkt.family = (flags & 1) ? net::Family::ipv6 : net::Family::ipv4;
  const bool extra_header = (flags & 2) != 0;  // IPv4 options / IPv6 destination options
  pkt.traffic_class = in.u8();
  const uint8_t ttl = in.u8();
  const uint32_t flow_label = in.u32() & 0xFFFFF;
  const uint16_t ip_id = in.u16();
  pkt.udp_sport = in.u16();
  std::array<uint8_t, 12> bth = in.bytes<12>();
  bth[1] &= 0xF0;  // TVer 0
  pkt.opcode = bth[0];
  pkt.dest_qp = uint32_t(bth[5]) << 16 | uint32_t(bth[6]) << 8 | bth[7];
  pkt.psn = uint32_t(bth[9]) << 16 | uint32_t(bth[10]) << 8 | bth[11];
  const auto src = in.bytes<16>();
  const auto dst = in.bytes<16>();
  const unsigned option_words = extra_header ? 1 + in.u8() % 10 : 0;  // IPv4 IHL 6..15
  const std::span<const uint8_t> payload = in.rest(max_payload);

  // The headers themselves: tests/common/packet_builder.hpp, shared with the unit tests.
  using namespace srv6gw::test;
  Bytes udp;
  put16(udp, pkt.udp_sport);
  put16(udp, 4791);
  put16(udp, uint16_t(8 + bth.size() + payload.size() + 4));
  put16(udp, 0);
  append(udp, bth);
  append(udp, payload);
  put32(udp, 0);  // ICRC, filled below
  if (pkt.family == net::Family::ipv4) {
    Ipv4Fields f;
    f.version_ihl = uint8_t(0x45 + option_words);  // NOP options
    f.tos = pkt.traffic_class;
    f.id = ip_id;
    f.ttl = ttl;
    std::copy(src.begin(), src.begin() + 4, f.src.begin());
    std::copy(dst.begin(), dst.begin() + 4, f.dst.begin());
    pkt.bytes = ipv4(f, udp);
  } else {
    Ipv6Fields f;
    f.tc = pkt.traffic_class;
    f.flow_label = flow_label;
    f.next_header = extra_header ? 60 : 17;  // destination options, or UDP
    f.hop_limit = ttl;
    f.src = src;
    f.dst = dst;
    pkt.bytes = ipv6(f, extra_header ? concat({ext_opts(17), udp}) : udp);
  }
  std::vector<uint8_t>& b = pkt.bytes;
  net::roce_icrc_fill(b, pkt.family);
  return pkt;
}

}  // namespace srv6gw::fuzz
