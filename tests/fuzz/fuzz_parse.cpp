// SPDX-License-Identifier: BSD-3-Clause
// Fuzzes RoCEv2 classification (net::parse_frame, net::parse_ip) and the ICRC on arbitrary
// bytes. Beyond "no crash, no out-of-bounds read" (ASan), it checks that every reported
// offset lies inside the frame in header order, that parse_frame and parse_ip agree on the
// same L3 bytes, that pass-through statuses are what they say, and that an ICRC written by
// roce_icrc_fill is accepted by roce_icrc_valid and changes nothing but the trailer, and that
// parse_frame's fast path gives the general walk's status and record.
#include <cstring>
#include <span>
#include <vector>

#include "fuzz_util.hpp"
#include "net/icrc.hpp"
#include "net/parse.hpp"

namespace {

using srv6gw::net::Family;
using srv6gw::net::PacketInfo;
using srv6gw::net::ParseStatus;
namespace net = srv6gw::net;

bool l3_status(ParseStatus s) {
  return s != ParseStatus::truncated_eth && s != ParseStatus::truncated_vlan &&
         s != ParseStatus::too_many_vlans && s != ParseStatus::not_ip;
}

// Invariants of a classification of the IP packet at `l3` inside `frame`.
void check_info(std::span<const uint8_t> frame, size_t l3, ParseStatus st, const PacketInfo& info) {
  FUZZ_CHECK(unsigned(st) < unsigned(ParseStatus::count_));
  FUZZ_CHECK(std::strcmp(net::to_string(st), "unknown") != 0);
  FUZZ_CHECK(info.dscp < 64 && info.ecn < 4 && info.ipv6_flow_label <= 0xFFFFF);
  if (st == ParseStatus::not_udp) FUZZ_CHECK(info.l4_proto != net::kProtoUdp);
  if (st == ParseStatus::not_roce) FUZZ_CHECK(info.udp_dport != net::kRoceV2Port);
  if (st == ParseStatus::fragment) FUZZ_CHECK(info.fragment);
  if (st != ParseStatus::ok) return;

  FUZZ_CHECK(info.family == Family::ipv4 || info.family == Family::ipv6);
  FUZZ_CHECK(info.src.family == info.family && info.dst.family == info.family);
  FUZZ_CHECK(info.l3_offset == l3);
  // l3_len <= frame - l3_offset: the IP packet as its header gives it lies in the frame.
  FUZZ_CHECK(info.l3_len <= frame.size() - l3);
  const size_t l3_end = l3 + info.l3_len;
  const uint8_t* ip = frame.data() + l3;
  if (info.family == Family::ipv4) {
    const size_t ihl = size_t(ip[0] & 0xF) * 4;
    FUZZ_CHECK(ip[0] >> 4 == 4 && ihl >= 20);
    FUZZ_CHECK(info.l4_offset == l3 + ihl);
    FUZZ_CHECK(info.has_ip_options == (ihl > 20));
    FUZZ_CHECK(info.l3_len == srv6gw::fuzz::be16(ip + 2));
    FUZZ_CHECK(info.ttl == ip[8]);
    FUZZ_CHECK((srv6gw::fuzz::be16(ip + 6) & 0x3FFF) == 0);  // never ok for a fragment
  } else {
    FUZZ_CHECK(ip[0] >> 4 == 6);
    FUZZ_CHECK(info.l4_offset >= l3 + 40);
    FUZZ_CHECK((info.l4_offset - l3 - 40) % 8 == 0);  // extension headers are 8-byte units
    FUZZ_CHECK(info.l3_len == 40 + srv6gw::fuzz::be16(ip + 4));
    FUZZ_CHECK(info.ttl == ip[7]);
  }
  FUZZ_CHECK(!info.fragment);
  FUZZ_CHECK(info.l4_proto == net::kProtoUdp);
  FUZZ_CHECK(info.udp_dport == net::kRoceV2Port);
  // Ordered: L3 < L4 < BTH, and BTH + ICRC inside the UDP datagram inside the IP packet.
  FUZZ_CHECK(info.l3_offset < info.l4_offset);
  FUZZ_CHECK(info.bth_offset == info.l4_offset + net::kUdpHeaderLen);
  const uint8_t* udp = frame.data() + info.l4_offset;
  const size_t udp_len = srv6gw::fuzz::be16(udp + 4);
  FUZZ_CHECK(udp_len >= net::kUdpHeaderLen + net::kBthLen + net::kIcrcLen);
  FUZZ_CHECK(info.l4_offset + udp_len <= l3_end);
  FUZZ_CHECK(info.udp_sport == srv6gw::fuzz::be16(udp));
  const uint8_t* bth = frame.data() + info.bth_offset;
  FUZZ_CHECK(info.bth.opcode == bth[0]);
  FUZZ_CHECK(info.bth.tver() == 0 && info.bth.pad_count() < 4);
  FUZZ_CHECK(info.bth.dest_qp == (uint32_t(bth[5]) << 16 | uint32_t(bth[6]) << 8 | bth[7]));
  FUZZ_CHECK(info.bth.psn() == (uint32_t(bth[9]) << 16 | uint32_t(bth[10]) << 8 | bth[11]));
  FUZZ_CHECK(info.is_cnp == (info.bth.opcode == net::kBthOpcodeCnp));
  const uint32_t label = net::outer_flow_label(info);
  FUZZ_CHECK(label != 0 && label <= 0xFFFFF);

  // ICRC: fill then verify on a copy of exactly the IP packet (heap-exact, so ASan sees any
  // access past its end), and the fill writes only the trailer. With the frame's padding
  // after it, the ICRC functions must find the same trailer (lengths come from the header).
  std::vector<uint8_t> pkt(frame.begin() + long(l3), frame.begin() + long(l3_end));
  const uint32_t crc = net::roce_icrc(pkt, info.family);
  FUZZ_CHECK(crc == net::roce_icrc(frame.subspan(l3), info.family));
  net::roce_icrc_fill(pkt, info.family);
  FUZZ_CHECK(std::memcmp(pkt.data(), ip, pkt.size() - 4) == 0);
  FUZZ_CHECK(net::roce_icrc_valid(pkt, info.family));
  const uint8_t* t = pkt.data() + pkt.size() - 4;
  FUZZ_CHECK((uint32_t(t[0]) | uint32_t(t[1]) << 8 | uint32_t(t[2]) << 16 | uint32_t(t[3]) << 24) ==
             crc);
  FUZZ_CHECK(net::roce_icrc_valid(frame.subspan(l3), info.family) ==
             (std::memcmp(ip + info.l3_len - 4, t, 4) == 0));
}

// parse_ip on the same bytes must give the same answer with offsets shifted by `l3`.
void check_agrees(std::span<const uint8_t> frame, const PacketInfo& in_frame, ParseStatus st) {
  const size_t l3 = in_frame.l3_offset;
  PacketInfo at_ip;
  const ParseStatus st_ip = net::parse_ip(frame.subspan(l3), in_frame.family, at_ip);
  FUZZ_CHECK(st_ip == st);
  FUZZ_CHECK(at_ip.family == in_frame.family);
  if (st != ParseStatus::ok) return;
  FUZZ_CHECK(at_ip.l3_offset == 0);
  FUZZ_CHECK(at_ip.l3_len == in_frame.l3_len);
  FUZZ_CHECK(at_ip.l4_offset + l3 == in_frame.l4_offset);
  FUZZ_CHECK(at_ip.bth_offset + l3 == in_frame.bth_offset);
  FUZZ_CHECK(at_ip.src == in_frame.src && at_ip.dst == in_frame.dst);
  FUZZ_CHECK(at_ip.bth.dest_qp == in_frame.bth.dest_qp && at_ip.bth.psn() == in_frame.bth.psn());
  FUZZ_CHECK(net::outer_flow_label(at_ip) == net::outer_flow_label(in_frame));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> frame(data, size);

  PacketInfo info;
  const ParseStatus st = net::parse_frame(frame, info);
  // The fast path for the common frame decides exactly as the general walk, with the same
  // record (for every status: a frame it does not take goes to the walk).
  PacketInfo general;
  FUZZ_CHECK(net::parse_frame_general(frame, general) == st);
  FUZZ_CHECK(general == info);
  FUZZ_CHECK(info.vlan_count <= net::kMaxVlanTags);
  if (st == ParseStatus::truncated_eth) FUZZ_CHECK(size < 14);
  if (size >= 14 && st != ParseStatus::truncated_vlan && st != ParseStatus::too_many_vlans) {
    // L2 length = Ethernet header + the tags read, and within the frame.
    FUZZ_CHECK(info.l3_offset == 14 + 4 * info.vlan_count);
    FUZZ_CHECK(info.l3_offset <= size);
  }
  if (st == ParseStatus::not_ip) FUZZ_CHECK(info.family == Family::none);
  if (l3_status(st)) {
    check_info(frame, info.l3_offset, st, info);
    check_agrees(frame, info, st);
  }

  // The same bytes as a bare IP packet of either family (the inner-packet entry point).
  for (const Family family : {Family::ipv4, Family::ipv6}) {
    PacketInfo ip_info;
    const ParseStatus ip_st = net::parse_ip(frame, family, ip_info);
    FUZZ_CHECK(ip_info.family == family);
    check_info(frame, 0, ip_st, ip_info);
    // The decap taps skip the parse when may_be_cnp says no: it must never say no to a CNP.
    if (ip_st == ParseStatus::ok && ip_info.is_cnp) FUZZ_CHECK(net::may_be_cnp(frame, family));
    const bool valid = net::roce_icrc_valid(frame, family);
    if (ip_st != ParseStatus::ok) FUZZ_CHECK(!valid && net::roce_icrc(frame, family) == 0);
  }
  PacketInfo none_info;
  FUZZ_CHECK(net::parse_ip(frame, Family::none, none_info) == ParseStatus::not_ip);
  return 0;
}
