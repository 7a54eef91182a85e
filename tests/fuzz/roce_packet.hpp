// SPDX-License-Identifier: BSD-3-Clause
// Builds a well-formed RoCEv2 packet (IPv4 or IPv6, starting at the IP header) from fuzzer
// bytes, byte by byte from the RFC / IBTA layouts: every header field the fuzzer may vary
// (ToS/traffic class, TTL, flow label, addresses, IPv4 options, an IPv6 destination-options
// header, UDP source port, the BTH, payload length and content) comes from the input; the
// lengths and the checksum are computed; the ICRC is filled in by the code under test and
// then verified by the caller.
// Input layout: flags (bit 0 IPv6, bit 1 IPv4 options / IPv6 destination options), ToS or
// traffic class, TTL, flow label (4), IPv4 id (2), UDP source port (2), BTH (12; TVer forced
// to 0), source (16), destination (16; IPv4 uses the first 4 bytes of each), the number of
// IPv4 option words when bit 1 is set, then the payload (the rest, up to `max_payload`).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "fuzz_util.hpp"
#include "net/addr.hpp"
#include "net/icrc.hpp"

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

  const size_t udp_len = 8 + 12 + payload.size() + 4;
  std::vector<uint8_t>& b = pkt.bytes;
  if (pkt.family == net::Family::ipv4) {
    const size_t ihl = 20 + 4 * option_words;
    b.assign(ihl, 0);
    b[0] = uint8_t(0x40 | ihl / 4);
    b[1] = pkt.traffic_class;
    put_be16(&b[2], uint16_t(ihl + udp_len));
    put_be16(&b[4], ip_id);
    b[6] = 0x40;  // DF, as RoCEv2 sends it
    b[8] = ttl;
    b[9] = 17;
    std::copy(src.begin(), src.begin() + 4, b.begin() + 12);
    std::copy(dst.begin(), dst.begin() + 4, b.begin() + 16);
    for (size_t i = 20; i < ihl; ++i) b[i] = 0x01;  // NOP options
    put_be16(&b[10], inet_checksum({b.data(), ihl}));
  } else {
    const size_t ext = extra_header ? 8 : 0;
    b.assign(40 + ext, 0);
    const uint32_t w0 = 6u << 28 | uint32_t(pkt.traffic_class) << 20 | flow_label;
    b[0] = uint8_t(w0 >> 24);
    b[1] = uint8_t(w0 >> 16);
    b[2] = uint8_t(w0 >> 8);
    b[3] = uint8_t(w0);
    put_be16(&b[4], uint16_t(ext + udp_len));
    b[6] = extra_header ? 60 : 17;  // destination options, or UDP
    b[7] = ttl;
    std::copy(src.begin(), src.end(), b.begin() + 8);
    std::copy(dst.begin(), dst.end(), b.begin() + 24);
    if (extra_header) {
      b[40] = 17;  // next header UDP, hdr ext len 0 (8 bytes)
      b[42] = 1;   // PadN, 4 bytes of padding
      b[43] = 4;
    }
  }
  const size_t udp = b.size();
  b.resize(udp + udp_len, 0);
  put_be16(&b[udp], pkt.udp_sport);
  put_be16(&b[udp + 2], 4791);
  put_be16(&b[udp + 4], uint16_t(udp_len));
  std::copy(bth.begin(), bth.end(), b.begin() + long(udp) + 8);
  std::copy(payload.begin(), payload.end(), b.begin() + long(udp) + 20);
  net::roce_icrc_fill(b, pkt.family);
  return pkt;
}

}  // namespace srv6gw::fuzz
