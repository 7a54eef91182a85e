// SPDX-License-Identifier: BSD-3-Clause
// RoCEv2 classifier: every field of PacketInfo and every ParseStatus on hand-built frames.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "net/hash.hpp"
#include "net/l2.hpp"
#include "net/parse.hpp"
#include "packet_builder.hpp"

namespace srv6gw::net {
namespace {

using test::BthFields;
using test::Bytes;
using test::Ipv4Fields;
using test::Ipv6Fields;

ParseStatus parse(const Bytes& frame, PacketInfo& info) {
  return parse_frame(frame, info);
}

Bytes v4_roce_frame(const Ipv4Fields& ip = {}, const BthFields& b = {}, size_t payload = 16,
                    uint16_t sport = 49152) {
  return test::ethernet(kEthTypeIpv4, test::ipv4(ip, test::udp_roce(sport, 4791, b, payload)));
}

Bytes v6_roce_frame(const Ipv6Fields& ip = {}, const BthFields& b = {}, size_t payload = 16) {
  return test::ethernet(kEthTypeIpv6, test::ipv6(ip, test::udp_roce(50000, 4791, b, payload)));
}

TEST(Parse, Ipv4RoceEveryField) {
  Ipv4Fields ip;
  ip.tos = 0xB9;  // DSCP 46, ECN 1
  ip.ttl = 17;
  ip.src = {192, 168, 1, 10};
  ip.dst = {192, 168, 2, 20};
  BthFields b;
  b.opcode = 0x0A;
  b.byte1 = 0x80 | 0x40 | 0x30;  // SE, M, PadCnt 3, TVer 0
  b.pkey = 0x8001;
  b.byte4 = 0x80 | 0x40;  // FECN, BECN
  b.dest_qp = 0xABCDEF;
  b.byte8 = 0x80;  // AckReq
  b.psn = 0xFEDCBA;
  const Bytes f = v4_roce_frame(ip, b, 32, 0xC123);
  PacketInfo info;
  ASSERT_EQ(parse(f, info), ParseStatus::ok);
  EXPECT_EQ(info.family, Family::ipv4);
  EXPECT_EQ(info.vlan_count, 0);
  EXPECT_EQ(info.l3_offset, 14);
  EXPECT_EQ(info.l3_len, 20 + 8 + 12 + 32 + 4);
  EXPECT_EQ(info.l4_offset, 34);
  EXPECT_EQ(info.bth_offset, 42);
  EXPECT_EQ(info.l4_proto, 17);
  EXPECT_EQ(info.src, IpAddr::v4(Ipv4Addr{{192, 168, 1, 10}}));
  EXPECT_EQ(info.dst, IpAddr::v4(Ipv4Addr{{192, 168, 2, 20}}));
  EXPECT_EQ(info.dscp, 46);
  EXPECT_EQ(info.ecn, 1);
  EXPECT_EQ(info.ttl, 17);
  EXPECT_EQ(info.ipv6_flow_label, 0u);
  EXPECT_FALSE(info.has_ip_options);
  EXPECT_FALSE(info.fragment);
  EXPECT_EQ(info.udp_sport, 0xC123);
  EXPECT_EQ(info.udp_dport, 4791);
  EXPECT_EQ(info.bth.opcode, 0x0A);
  EXPECT_TRUE(info.bth.solicited_event());
  EXPECT_TRUE(info.bth.mig_req());
  EXPECT_EQ(info.bth.pad_count(), 3);
  EXPECT_EQ(info.bth.tver(), 0);
  EXPECT_EQ(info.bth.pkey(), 0x8001);
  EXPECT_TRUE(info.bth.fecn());
  EXPECT_TRUE(info.bth.becn());
  EXPECT_EQ(info.bth.dest_qp, 0xABCDEFu);
  EXPECT_TRUE(info.bth.ack_req());
  EXPECT_EQ(info.bth.psn(), 0xFEDCBAu);
  EXPECT_FALSE(info.is_cnp);
}

TEST(Parse, BthFlagsClearAndIndependent) {
  // Each flag alone, so a field reading the wrong bit shows up.
  struct Case {
    uint8_t byte1, byte4, byte8;
    bool se, m, fecn, becn, a;
    uint8_t pad;
  };
  const Case cases[] = {
      {0x00, 0x00, 0x00, false, false, false, false, false, 0},
      {0x80, 0x00, 0x00, true, false, false, false, false, 0},
      {0x40, 0x00, 0x00, false, true, false, false, false, 0},
      {0x10, 0x00, 0x00, false, false, false, false, false, 1},
      {0x20, 0x00, 0x00, false, false, false, false, false, 2},
      {0x00, 0x80, 0x00, false, false, true, false, false, 0},
      {0x00, 0x40, 0x00, false, false, false, true, false, 0},
      {0x00, 0x3F, 0x7F, false, false, false, false, false, 0},  // reserved bits ignored
      {0x00, 0x00, 0x80, false, false, false, false, true, 0},
  };
  for (const Case& c : cases) {
    BthFields b;
    b.byte1 = c.byte1;
    b.byte4 = c.byte4;
    b.byte8 = c.byte8;
    b.dest_qp = 0x000001;
    b.psn = 0xFFFFFF;
    PacketInfo info;
    ASSERT_EQ(parse(v4_roce_frame({}, b), info), ParseStatus::ok);
    EXPECT_EQ(info.bth.solicited_event(), c.se);
    EXPECT_EQ(info.bth.mig_req(), c.m);
    EXPECT_EQ(info.bth.fecn(), c.fecn);
    EXPECT_EQ(info.bth.becn(), c.becn);
    EXPECT_EQ(info.bth.ack_req(), c.a);
    EXPECT_EQ(info.bth.pad_count(), c.pad);
    EXPECT_EQ(info.bth.dest_qp, 1u);
    EXPECT_EQ(info.bth.psn(), 0xFFFFFFu);
  }
}

TEST(Parse, CnpOpcode) {
  BthFields b;
  b.opcode = kBthOpcodeCnp;
  PacketInfo info;
  ASSERT_EQ(parse(v4_roce_frame({}, b), info), ParseStatus::ok);
  EXPECT_TRUE(info.is_cnp);
  EXPECT_EQ(info.bth.opcode, 0x81);
  b.opcode = 0x80;
  ASSERT_EQ(parse(v4_roce_frame({}, b), info), ParseStatus::ok);
  EXPECT_FALSE(info.is_cnp);
}

// may_be_cnp (the decap taps' pre-check) says no only to packets that are not CNPs: every
// CNP layout, options and extension headers included, gets a yes; the usual data packet a no.
TEST(Parse, MayBeCnpNeverMissesACnp) {
  const auto ip_of = [](const Bytes& frame) {
    return std::span<const uint8_t>(frame).subspan(kEthHeaderLen);
  };
  BthFields cnp;
  cnp.opcode = kBthOpcodeCnp;
  BthFields data;
  data.opcode = 0x0A;  // RDMA WRITE only
  Ipv4Fields options;
  options.version_ihl = 0x47;
  Ipv6Fields hop_by_hop;
  hop_by_hop.next_header = kProtoHopByHop;
  const Bytes v6_ext_cnp = test::ethernet(
      kEthTypeIpv6, test::ipv6(hop_by_hop, test::concat({test::ext_opts(kProtoUdp),
                                                         test::udp_roce(50000, 4791, cnp, 16)})));
  for (const auto& [frame, family] :
       {std::pair{v4_roce_frame({}, cnp), Family::ipv4},
        std::pair{v4_roce_frame(options, cnp), Family::ipv4},
        std::pair{v6_roce_frame({}, cnp), Family::ipv6}, std::pair{v6_ext_cnp, Family::ipv6}}) {
    PacketInfo info;
    ASSERT_EQ(net::parse_ip(ip_of(frame), family, info), ParseStatus::ok);
    ASSERT_TRUE(info.is_cnp);
    EXPECT_TRUE(net::may_be_cnp(ip_of(frame), family));
  }
  EXPECT_FALSE(net::may_be_cnp(ip_of(v4_roce_frame({}, data)), Family::ipv4));
  EXPECT_FALSE(net::may_be_cnp(ip_of(v6_roce_frame({}, data)), Family::ipv6));
  Bytes not_roce = v4_roce_frame({}, cnp);
  not_roce[kEthHeaderLen + 20 + 3] ^= 1;  // UDP destination port 4790
  EXPECT_FALSE(net::may_be_cnp(ip_of(not_roce), Family::ipv4));
}

TEST(Parse, Ipv4OptionsShiftL4) {
  Ipv4Fields ip;
  ip.version_ihl = 0x47;  // 8 bytes of options
  PacketInfo info;
  ASSERT_EQ(parse(v4_roce_frame(ip), info), ParseStatus::ok);
  EXPECT_TRUE(info.has_ip_options);
  EXPECT_EQ(info.l4_offset, 14 + 28);
  EXPECT_EQ(info.bth_offset, 14 + 28 + 8);
  EXPECT_EQ(info.bth.dest_qp, 0x123u);
}

TEST(Parse, TrailingEthernetPaddingIgnored) {
  // Smallest RoCE packet is 20+8+12+4 = 44 bytes; a 60-byte frame pads it. Pad with bytes
  // that would break the BTH if lengths came from the frame size.
  Bytes f = v4_roce_frame({}, {}, 0);
  ASSERT_EQ(f.size(), 14u + 44u);
  f.resize(64, 0xEE);
  PacketInfo info;
  ASSERT_EQ(parse(f, info), ParseStatus::ok);
  EXPECT_EQ(info.l3_len, 44);
  Bytes f6 = v6_roce_frame({}, {}, 0);
  f6.resize(f6.size() + 9, 0xEE);
  ASSERT_EQ(parse(f6, info), ParseStatus::ok);
  EXPECT_EQ(info.l3_len, 40 + 24);
}

TEST(Parse, Ipv6RoceEveryField) {
  Ipv6Fields ip;
  ip.tc = 0x6A;  // DSCP 26, ECN 2
  ip.flow_label = 0xABCDE;
  ip.hop_limit = 3;
  ip.src = test::v6({0x2001, 0xdb8}, 0x11);
  ip.dst = test::v6({0x2001, 0xdb8}, 0x22);
  BthFields b;
  b.dest_qp = 0x00FFEE;
  PacketInfo info;
  ASSERT_EQ(parse(v6_roce_frame(ip, b, 8), info), ParseStatus::ok);
  EXPECT_EQ(info.family, Family::ipv6);
  EXPECT_EQ(info.l3_offset, 14);
  EXPECT_EQ(info.l3_len, 40 + 8 + 12 + 8 + 4);
  EXPECT_EQ(info.l4_offset, 54);
  EXPECT_EQ(info.bth_offset, 62);
  EXPECT_EQ(info.l4_proto, 17);
  EXPECT_EQ(info.dscp, 26);
  EXPECT_EQ(info.ecn, 2);
  EXPECT_EQ(info.ttl, 3);
  EXPECT_EQ(info.ipv6_flow_label, 0xABCDEu);
  EXPECT_EQ(info.src, IpAddr::v6(Ipv6Addr{test::v6({0x2001, 0xdb8}, 0x11)}));
  EXPECT_EQ(info.dst, IpAddr::v6(Ipv6Addr{test::v6({0x2001, 0xdb8}, 0x22)}));
  EXPECT_EQ(info.udp_sport, 50000);
  EXPECT_EQ(info.bth.dest_qp, 0xFFEEu);
  EXPECT_FALSE(info.has_ip_options);
}

TEST(Parse, Ipv6ExtensionHeadersWalked) {
  // hop-by-hop (16 B) -> destination options (8 B) -> SRH with 2 SIDs (40 B)
  // -> atomic fragment (8 B) -> UDP
  const Bytes udp = test::udp_roce(50000, 4791, {}, 16);
  const Bytes exts =
      test::concat({test::ext_opts(kProtoDestOpts, 1), test::ext_opts(kProtoRouting),
                    test::routing_hdr(kProtoFragment, 4, 0, 1, 7,
                                      {test::v6({0xfc00}, 1), test::v6({0xfc00}, 2)}),
                    test::fragment_hdr(kProtoUdp, 0, false)});
  Ipv6Fields ip;
  ip.next_header = kProtoHopByHop;
  PacketInfo info;
  ASSERT_EQ(parse(test::ethernet(kEthTypeIpv6, test::ipv6(ip, test::concat({exts, udp}))), info),
            ParseStatus::ok);
  EXPECT_EQ(info.l4_offset, 14 + 40 + 16 + 8 + 40 + 8);
  EXPECT_EQ(info.bth_offset, info.l4_offset + 8);
  EXPECT_FALSE(info.fragment);
  EXPECT_EQ(info.bth.dest_qp, 0x123u);
}

TEST(Parse, ExtensionChainBound) {
  const Bytes udp = test::udp_roce(50000, 4791, {}, 0);
  for (unsigned count : {kMaxExtHeaders, kMaxExtHeaders + 1}) {
    Bytes exts;
    for (unsigned i = 0; i < count; ++i)
      test::append(exts, test::ext_opts(i + 1 == count ? kProtoUdp : kProtoDestOpts));
    Ipv6Fields ip;
    ip.next_header = kProtoDestOpts;
    PacketInfo info;
    const auto st =
        parse(test::ethernet(kEthTypeIpv6, test::ipv6(ip, test::concat({exts, udp}))), info);
    EXPECT_EQ(st, count == kMaxExtHeaders ? ParseStatus::ok : ParseStatus::ext_chain_too_long)
        << count;
  }
}

TEST(Parse, VlanTags) {
  const Bytes ip = test::ipv4({}, test::udp_roce(1, 4791, {}, 0));
  PacketInfo info;
  ASSERT_EQ(parse(test::ethernet(kEthTypeIpv4, ip, {{kEthTypeVlan, 0x2064}}), info),
            ParseStatus::ok);
  EXPECT_EQ(info.vlan_count, 1);
  EXPECT_EQ(info.vlan_tpid[0], kEthTypeVlan);
  EXPECT_EQ(info.vlan_tci[0], 0x2064);
  EXPECT_EQ(info.l3_offset, 18);
  EXPECT_EQ(info.bth_offset, 18 + 28);

  ASSERT_EQ(
      parse(test::ethernet(kEthTypeIpv4, ip, {{kEthTypeQinQ, 0x0005}, {kEthTypeVlan, 0xE00A}}),
            info),
      ParseStatus::ok);
  EXPECT_EQ(info.vlan_count, 2);
  EXPECT_EQ(info.vlan_tpid[0], kEthTypeQinQ);
  EXPECT_EQ(info.vlan_tci[0], 0x0005);
  EXPECT_EQ(info.vlan_tpid[1], kEthTypeVlan);
  EXPECT_EQ(info.vlan_tci[1], 0xE00A);
  EXPECT_EQ(info.l3_offset, 22);

  // Double 802.1Q is also seen in the field.
  ASSERT_EQ(parse(test::ethernet(kEthTypeIpv6, test::ipv6({}, test::udp_roce(1, 4791, {}, 0)),
                                 {{kEthTypeVlan, 1}, {kEthTypeVlan, 2}}),
                  info),
            ParseStatus::ok);
  EXPECT_EQ(info.l3_offset, 22);
  EXPECT_EQ(info.family, Family::ipv6);
}

// The L2 walk the fabric side and srv6gw-pcap share with parse_frame: same outcome and L3
// offset as the parser on every tag layout, whatever the payload.
TEST(Parse, L2WalkAgreesWithParser) {
  const Bytes ip = test::ipv4({}, test::udp_roce(1, 4791, {}, 0));
  Bytes vlan_cut = test::ethernet(kEthTypeVlan, {});
  vlan_cut.push_back(0x00);
  const std::vector<Bytes> frames = {
      Bytes{},
      Bytes(13, 0),
      test::ethernet(kEthTypeIpv4, ip),
      test::ethernet(kEthTypeIpv6, test::ipv6({}, test::udp_roce(1, 4791, {}, 0)),
                     {{kEthTypeQinQ, 1}, {kEthTypeVlan, 2}}),
      test::ethernet(kEthTypeIpv4, ip, {{kEthTypeVlan, 7}}),
      vlan_cut,
      test::ethernet(kEthTypeIpv4, ip, {{kEthTypeQinQ, 1}, {kEthTypeVlan, 2}, {kEthTypeVlan, 3}}),
  };
  const std::vector<ParseStatus> walk_expected = {ParseStatus::truncated_eth,
                                                  ParseStatus::truncated_eth,
                                                  ParseStatus::ok,
                                                  ParseStatus::ok,
                                                  ParseStatus::ok,
                                                  ParseStatus::truncated_vlan,
                                                  ParseStatus::too_many_vlans};
  for (size_t i = 0; i < frames.size(); ++i) {
    SCOPED_TRACE(i);
    L2Header l2;
    unsigned tags = 0;
    const ParseStatus walked = walk_l2(frames[i].data(), frames[i].size(), l2,
                                       [&tags](unsigned, uint16_t, uint16_t) { ++tags; });
    EXPECT_EQ(walked, walk_expected[i]);
    PacketInfo info;
    const ParseStatus parsed = parse(frames[i], info);
    if (walked != ParseStatus::ok) {
      EXPECT_EQ(parsed, walked);
      continue;
    }
    EXPECT_EQ(parsed, ParseStatus::ok);
    EXPECT_EQ(l2.l3_offset, info.l3_offset);
    EXPECT_EQ(tags, info.vlan_count);
    EXPECT_EQ(l2.ethertype, info.family == Family::ipv4 ? kEthTypeIpv4 : kEthTypeIpv6);
  }
}

TEST(Parse, PassThroughFieldsSetUpToFailingLayer) {
  // UDP but not RoCE: addresses and ports are known.
  Ipv4Fields ip;
  ip.tos = 0x03;
  PacketInfo info;
  ASSERT_EQ(
      parse(test::ethernet(kEthTypeIpv4, test::ipv4(ip, test::udp_roce(5353, 53, {}, 4))), info),
      ParseStatus::not_roce);
  EXPECT_EQ(info.family, Family::ipv4);
  EXPECT_EQ(info.udp_sport, 5353);
  EXPECT_EQ(info.udp_dport, 53);
  EXPECT_EQ(info.ecn, 3);
  EXPECT_EQ(info.dst, IpAddr::v4(Ipv4Addr{{10, 0, 0, 2}}));
  // TCP: protocol known.
  ip.proto = 6;
  ASSERT_EQ(parse(test::ethernet(kEthTypeIpv4, test::ipv4(ip, Bytes(20, 0))), info),
            ParseStatus::not_udp);
  EXPECT_EQ(info.l4_proto, 6);
  // IPv6 ending in No Next Header after an extension header.
  Ipv6Fields ip6;
  ip6.next_header = kProtoDestOpts;
  ASSERT_EQ(
      parse(test::ethernet(kEthTypeIpv6, test::ipv6(ip6, test::ext_opts(kProtoNoNext))), info),
      ParseStatus::not_udp);
  EXPECT_EQ(info.l4_proto, kProtoNoNext);
  // ARP
  ASSERT_EQ(parse(test::ethernet(0x0806, Bytes(28, 0)), info), ParseStatus::not_ip);
  EXPECT_EQ(info.family, Family::none);
}

TEST(Parse, ParseIpStartsAtIpHeader) {
  PacketInfo info;
  const Bytes v4 = test::ipv4({}, test::udp_roce(7, 4791, {}, 4));
  ASSERT_EQ(parse_ip(v4, Family::ipv4, info), ParseStatus::ok);
  EXPECT_EQ(info.l3_offset, 0);
  EXPECT_EQ(info.l4_offset, 20);
  EXPECT_EQ(info.bth_offset, 28);
  const Bytes v6 = test::ipv6({}, test::udp_roce(7, 4791, {}, 4));
  ASSERT_EQ(parse_ip(v6, Family::ipv6, info), ParseStatus::ok);
  EXPECT_EQ(info.l4_offset, 40);
  EXPECT_EQ(parse_ip(v6, Family::ipv4, info), ParseStatus::bad_ipv4_version);
  EXPECT_EQ(parse_ip(v6, Family::none, info), ParseStatus::not_ip);
}

// One row per malformed or pass-through input; the last test checks every ParseStatus
// value appears, so a new status cannot be left untested.
struct Row {
  const char* name;
  Bytes frame;
  ParseStatus want;
};

std::vector<Row> rows() {
  std::vector<Row> r;
  const Bytes udp = test::udp_roce(49152, 4791, {}, 16);
  const Bytes ip4 = test::ipv4({}, udp);
  const Bytes ip6 = test::ipv6({}, udp);
  auto eth4 = [](const Bytes& p) { return test::ethernet(kEthTypeIpv4, p); };
  auto eth6 = [](const Bytes& p) { return test::ethernet(kEthTypeIpv6, p); };

  r.push_back({"ok_v4", eth4(ip4), ParseStatus::ok});
  r.push_back({"ok_v6", eth6(ip6), ParseStatus::ok});
  r.push_back({"arp", test::ethernet(0x0806, Bytes(28, 0)), ParseStatus::not_ip});
  r.push_back({"empty", Bytes{}, ParseStatus::truncated_eth});
  r.push_back({"eth_13", Bytes(13, 0), ParseStatus::truncated_eth});
  {
    Bytes f = test::ethernet(kEthTypeVlan, {});  // TPID then nothing
    r.push_back({"vlan_cut_at_tci", f, ParseStatus::truncated_vlan});
    f.push_back(0x00);
    f.push_back(0x05);
    f.push_back(0x08);  // half an inner ethertype
    r.push_back({"vlan_cut_at_type", f, ParseStatus::truncated_vlan});
  }
  r.push_back(
      {"three_vlans",
       test::ethernet(kEthTypeIpv4, ip4, {{kEthTypeQinQ, 1}, {kEthTypeVlan, 2}, {kEthTypeVlan, 3}}),
       ParseStatus::too_many_vlans});
  r.push_back(
      {"v4_19_bytes", eth4(Bytes(ip4.begin(), ip4.begin() + 19)), ParseStatus::truncated_ipv4});
  {
    // A 60-byte header claimed in a 44-byte packet.
    Bytes p = test::ipv4({}, Bytes(24, 0));
    p[0] = 0x4F;
    r.push_back({"v4_ihl_past_frame", eth4(p), ParseStatus::truncated_ipv4});
  }
  {
    Bytes p = ip4;
    p[0] = 0x65;
    r.push_back({"v4_version_6", eth4(p), ParseStatus::bad_ipv4_version});
  }
  {
    Bytes p = ip4;
    p[0] = 0x44;
    r.push_back({"v4_ihl_4", eth4(p), ParseStatus::bad_ipv4_ihl});
  }
  {
    Ipv4Fields f;
    f.total_len_override = 19;
    r.push_back({"v4_total_lt_ihl", eth4(test::ipv4(f, udp)), ParseStatus::bad_ipv4_length});
    f.total_len_override = uint16_t(20 + udp.size() + 1);
    r.push_back({"v4_total_past_frame", eth4(test::ipv4(f, udp)), ParseStatus::bad_ipv4_length});
  }
  r.push_back(
      {"v6_39_bytes", eth6(Bytes(ip6.begin(), ip6.begin() + 39)), ParseStatus::truncated_ipv6});
  {
    Bytes p = ip6;
    p[0] = 0x45;
    r.push_back({"v6_version_4", eth6(p), ParseStatus::bad_ipv6_version});
  }
  {
    Ipv6Fields f;
    f.payload_len_override = int32_t(udp.size() + 1);
    r.push_back({"v6_payload_past_frame", eth6(test::ipv6(f, udp)), ParseStatus::bad_ipv6_length});
  }
  {
    Ipv6Fields f;
    f.next_header = kProtoHopByHop;
    Bytes ext = test::ext_opts(kProtoUdp, 3);  // claims 32 bytes
    ext.resize(24);
    r.push_back({"ext_len_past_payload", eth6(test::ipv6(f, ext)), ParseStatus::truncated_ext});
    r.push_back(
        {"ext_header_cut", eth6(test::ipv6(f, Bytes{17, 0, 1, 2})), ParseStatus::truncated_ext});
    f.next_header = kProtoFragment;
    r.push_back(
        {"frag_header_cut", eth6(test::ipv6(f, Bytes{17, 0, 0, 0})), ParseStatus::truncated_ext});
  }
  {
    Bytes exts;
    for (unsigned i = 0; i <= kMaxExtHeaders; ++i)
      test::append(exts, test::ext_opts(kProtoDestOpts));
    Ipv6Fields f;
    f.next_header = kProtoDestOpts;
    r.push_back({"nine_ext_headers", eth6(test::ipv6(f, exts)), ParseStatus::ext_chain_too_long});
  }
  {
    Ipv4Fields f;
    f.flags_frag = 0x2000;  // MF
    r.push_back({"v4_more_fragments", eth4(test::ipv4(f, udp)), ParseStatus::fragment});
    f.flags_frag = 0x4000 | 0x0010;  // DF with offset: still a fragment
    r.push_back({"v4_offset", eth4(test::ipv4(f, udp)), ParseStatus::fragment});
    Ipv6Fields f6;
    f6.next_header = kProtoFragment;
    r.push_back({"v6_first_fragment",
                 eth6(test::ipv6(f6, test::concat({test::fragment_hdr(kProtoUdp, 0, true), udp}))),
                 ParseStatus::fragment});
    r.push_back({"v6_later_fragment",
                 eth6(test::ipv6(f6, test::concat({test::fragment_hdr(kProtoUdp, 3, false), udp}))),
                 ParseStatus::fragment});
  }
  {
    Ipv4Fields f;
    f.proto = 6;
    r.push_back({"tcp", eth4(test::ipv4(f, Bytes(20, 0))), ParseStatus::not_udp});
    f.proto = 17;
    r.push_back({"udp_cut", eth4(test::ipv4(f, Bytes(7, 0))), ParseStatus::truncated_udp});
    // The frame holds more bytes but the IP header says the UDP header is cut.
    f.total_len_override = 20 + 4;
    r.push_back({"udp_cut_by_ip_len", eth4(test::ipv4(f, udp)), ParseStatus::truncated_udp});
  }
  r.push_back({"udp_len_7", eth4(test::ipv4({}, test::udp_roce(1, 4791, {}, 16, 7))),
               ParseStatus::bad_udp_length});
  r.push_back({"udp_len_past_ip",
               eth4(test::ipv4({}, test::udp_roce(1, 4791, {}, 16, uint16_t(udp.size() + 1)))),
               ParseStatus::bad_udp_length});
  r.push_back({"udp_v6_len_past_ip",
               eth6(test::ipv6({}, test::udp_roce(1, 4791, {}, 16, uint16_t(udp.size() + 1)))),
               ParseStatus::bad_udp_length});
  r.push_back(
      {"dns", eth4(test::ipv4({}, test::udp_roce(5353, 53, {}, 16))), ParseStatus::not_roce});
  {
    // UDP length 8+12+3: one byte short of BTH + ICRC.
    Bytes u = test::udp_roce(1, 4791, {}, 0);
    u.pop_back();
    u[5] = uint8_t(u.size());
    r.push_back({"bth_short", eth4(test::ipv4({}, u)), ParseStatus::truncated_bth});
    r.push_back({"bth_none", eth4(test::ipv4({}, Bytes{0, 1, 0x12, 0xB7, 0, 8, 0, 0})),
                 ParseStatus::truncated_bth});
  }
  {
    BthFields b;
    b.byte1 = 0x01;
    r.push_back(
        {"tver_1", eth4(test::ipv4({}, test::udp_roce(1, 4791, b, 0))), ParseStatus::bad_bth_tver});
    b.byte1 = 0xF8;  // other bits set, TVer 8
    r.push_back(
        {"tver_8", eth6(test::ipv6({}, test::udp_roce(1, 4791, b, 0))), ParseStatus::bad_bth_tver});
  }
  return r;
}

TEST(Parse, MalformedAndPassThroughTable) {
  for (const Row& row : rows()) {
    PacketInfo info;
    EXPECT_EQ(parse(row.frame, info), row.want)
        << row.name << ": got " << to_string(parse(row.frame, info)) << " want "
        << to_string(row.want);
    // Every prefix of every input must also parse without reading past its end (ASan/UBSan
    // builds turn an overread into a failure; here it at least must not crash).
    for (size_t n = 0; n < row.frame.size(); ++n) {
      Bytes prefix(row.frame.begin(), row.frame.begin() + n);
      prefix.shrink_to_fit();
      (void)parse(prefix, info);
    }
  }
}

TEST(Parse, EveryStatusCoveredAndNamed) {
  std::set<ParseStatus> seen;
  for (const Row& row : rows()) seen.insert(row.want);
  std::set<std::string> names;
  for (unsigned s = 0; s < unsigned(ParseStatus::count_); ++s) {
    const auto status = ParseStatus(s);
    EXPECT_TRUE(seen.count(status)) << "no test input yields " << to_string(status);
    const std::string name = to_string(status);
    EXPECT_NE(name, "unknown");
    EXPECT_TRUE(names.insert(name).second) << name;
  }
  EXPECT_STREQ(to_string(ParseStatus::bad_bth_tver), "bad_bth_tver");
  EXPECT_STREQ(to_string(ParseStatus::count_), "unknown");
}

// Random corruption of valid frames: the parser never reads outside the span (checked by the
// sanitizer builds) and, whenever it says ok, its offsets describe a packet inside the frame.
TEST(Parse, RandomCorruptionKeepsInvariants) {
  std::vector<Bytes> seeds;
  for (const Row& row : rows())
    if (row.want == ParseStatus::ok) seeds.push_back(row.frame);
  seeds.push_back(v4_roce_frame({}, {}, 40));
  uint64_t x = 0x9E3779B97F4A7C15ull;
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  size_t ok = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    Bytes f = seeds[next() % seeds.size()];
    const int flips = int(next() % 4) + 1;
    for (int k = 0; k < flips; ++k) f[next() % f.size()] ^= uint8_t(1u << (next() % 8));
    if (next() % 4 == 0) f.resize(next() % (f.size() + 1));
    f.shrink_to_fit();
    PacketInfo info;
    const ParseStatus st = parse_frame(f, info);
    ASSERT_LT(unsigned(st), unsigned(ParseStatus::count_));
    if (st != ParseStatus::ok) continue;
    ++ok;
    ASSERT_LE(size_t(info.l3_offset) + info.l3_len, f.size());
    ASSERT_LT(info.l3_offset, info.l4_offset);
    ASSERT_EQ(info.bth_offset, info.l4_offset + 8);
    ASSERT_LE(size_t(info.bth_offset) + kBthLen + kIcrcLen, size_t(info.l3_offset) + info.l3_len);
    ASSERT_EQ(info.bth.tver(), 0);
  }
  EXPECT_GT(ok, 1000u);  // many corruptions hit fields that do not matter
}

// parse_frame() does not clear the record on the RoCEv2 path (the data plane keeps it in
// uninitialised per-burst storage): whatever the record held before, the result must equal a
// parse into a fresh record, field by field, for every status.
void expect_same_info(const PacketInfo& a, const PacketInfo& b, const std::string& what) {
  EXPECT_EQ(a.family, b.family) << what;
  EXPECT_EQ(a.vlan_count, b.vlan_count) << what;
  for (unsigned i = 0; i < kMaxVlanTags; ++i) {
    EXPECT_EQ(a.vlan_tci[i], b.vlan_tci[i]) << what;
    EXPECT_EQ(a.vlan_tpid[i], b.vlan_tpid[i]) << what;
  }
  EXPECT_EQ(a.l3_offset, b.l3_offset) << what;
  EXPECT_EQ(a.l3_len, b.l3_len) << what;
  EXPECT_EQ(a.l4_offset, b.l4_offset) << what;
  EXPECT_EQ(a.bth_offset, b.bth_offset) << what;
  EXPECT_EQ(a.l4_proto, b.l4_proto) << what;
  EXPECT_EQ(a.src.family, b.src.family) << what;
  EXPECT_EQ(a.src.bytes, b.src.bytes) << what;
  EXPECT_EQ(a.dst.family, b.dst.family) << what;
  EXPECT_EQ(a.dst.bytes, b.dst.bytes) << what;
  EXPECT_EQ(a.dscp, b.dscp) << what;
  EXPECT_EQ(a.ecn, b.ecn) << what;
  EXPECT_EQ(a.ttl, b.ttl) << what;
  EXPECT_EQ(a.ipv6_flow_label, b.ipv6_flow_label) << what;
  EXPECT_EQ(a.has_ip_options, b.has_ip_options) << what;
  EXPECT_EQ(a.fragment, b.fragment) << what;
  EXPECT_EQ(a.udp_sport, b.udp_sport) << what;
  EXPECT_EQ(a.udp_dport, b.udp_dport) << what;
  EXPECT_EQ(a.bth.opcode, b.bth.opcode) << what;
  EXPECT_EQ(a.bth.solicited_event(), b.bth.solicited_event()) << what;
  EXPECT_EQ(a.bth.mig_req(), b.bth.mig_req()) << what;
  EXPECT_EQ(a.bth.pad_count(), b.bth.pad_count()) << what;
  EXPECT_EQ(a.bth.tver(), b.bth.tver()) << what;
  EXPECT_EQ(a.bth.pkey(), b.bth.pkey()) << what;
  EXPECT_EQ(a.bth.fecn(), b.bth.fecn()) << what;
  EXPECT_EQ(a.bth.becn(), b.bth.becn()) << what;
  EXPECT_EQ(a.bth.dest_qp, b.bth.dest_qp) << what;
  EXPECT_EQ(a.bth.ack_req(), b.bth.ack_req()) << what;
  EXPECT_EQ(a.bth.psn(), b.bth.psn()) << what;
  EXPECT_EQ(a.is_cnp, b.is_cnp) << what;
}

TEST(Parse, StaleRecordGivesTheSameResultAsAFreshOne) {
  std::vector<Bytes> frames;
  for (const Row& row : rows()) frames.push_back(row.frame);
  frames.push_back(v4_roce_frame({}, {}, 40));
  frames.push_back(v6_roce_frame());
  const size_t n_fixed = frames.size();
  uint64_t x = 0x2545F4914F6CDD1Dull;
  for (int i = 0; i < 3000; ++i) {  // corrupted variants: every status, many field values
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    Bytes f = frames[x % n_fixed];
    if (f.empty()) continue;
    f[(x >> 20) % f.size()] ^= uint8_t(1u << ((x >> 40) % 8));
    frames.push_back(f);
  }
  const uint8_t fills[] = {0x00, 0xFF, 0xA5};
  for (size_t i = 0; i < frames.size(); ++i) {
    PacketInfo fresh;
    const ParseStatus want = parse_frame(frames[i], fresh);
    for (uint8_t fill : fills) {
      PacketInfo stale;
      std::memset(static_cast<void*>(&stale), fill, sizeof stale);
      stale.family = Family::ipv6;  // keep the enum and bools valid values
      stale.src.family = stale.dst.family = Family::ipv4;
      stale.has_ip_options = stale.fragment = stale.is_cnp = true;
      ASSERT_EQ(parse_frame(frames[i], stale), want) << "frame " << i;
      expect_same_info(stale, fresh, "frame " + std::to_string(i) + " " + to_string(want));
      if (HasFailure()) return;
    }
  }
}

// parse_ip (the decap step's inner parse) does not clear the record first either: a stale
// record gives what a fresh one gives, for both families and every status.
TEST(Parse, ParseIpStaleRecordGivesTheSameResultAsAFreshOne) {
  std::vector<Bytes> packets = {test::ipv4({}, test::udp_roce(7, 4791, {}, 4)),
                                test::ipv6({}, test::udp_roce(7, 4791, {}, 4)),
                                test::ipv4({}, test::udp_roce(7, 4791, {0x81}, 4))};
  const size_t n_fixed = packets.size();
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < 3000; ++i) {  // corrupted variants: every status, many field values
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    Bytes p = packets[x % n_fixed];
    p[(x >> 20) % p.size()] ^= uint8_t(1u << ((x >> 40) % 8));
    if ((x >> 50) % 4 == 0) p.resize((x >> 30) % p.size());
    packets.push_back(p);
  }
  const uint8_t fills[] = {0x00, 0xFF, 0xA5};
  for (size_t i = 0; i < packets.size(); ++i) {
    for (Family family : {Family::ipv4, Family::ipv6, Family::none}) {
      PacketInfo fresh;
      const ParseStatus want = parse_ip(packets[i], family, fresh);
      for (uint8_t fill : fills) {
        PacketInfo stale;
        std::memset(static_cast<void*>(&stale), fill, sizeof stale);
        stale.family = Family::ipv6;  // keep the enum and bools valid values
        stale.src.family = stale.dst.family = Family::ipv4;
        stale.has_ip_options = stale.fragment = stale.is_cnp = true;
        ASSERT_EQ(parse_ip(packets[i], family, stale), want) << "packet " << i;
        EXPECT_TRUE(stale == fresh) << "packet " << i << " " << to_string(want);
        expect_same_info(stale, fresh, "packet " + std::to_string(i) + " " + to_string(want));
        if (HasFailure()) return;
      }
    }
  }
}

// parse_frame's fast path (untagged IPv4 without options, UDP 4791, BTH) must decide exactly
// as the general walk and give the same record: every truncation and every single-bit flip of
// the first 62 bytes of common frames (each check of the fast path sits there), tagged, IPv6
// and option-carrying frames, and a range of IP and UDP lengths against the frame's.
TEST(Parse, FastPathGivesTheGeneralWalksStatusAndRecord) {
  std::vector<Bytes> bases;
  for (const Row& row : rows()) bases.push_back(row.frame);
  Ipv4Fields ip;
  ip.tos = 0x6B;
  ip.ttl = 3;
  BthFields b;
  b.opcode = 0x81;
  b.byte1 = 0xF0;
  b.byte4 = 0xC0;
  b.byte8 = 0x80;
  b.dest_qp = 0x123456;
  b.psn = 0xABCDEF;
  bases.push_back(v4_roce_frame(ip, b, 40, 0xC001));
  bases.push_back(v4_roce_frame({}, {}, 0));
  bases.push_back(v6_roce_frame());
  std::vector<Bytes> frames = bases;
  for (const Bytes& base : bases) {
    for (size_t len = 0; len < base.size(); ++len)
      frames.emplace_back(base.begin(), base.begin() + long(len));
    Bytes padded = base;
    padded.resize(base.size() + 20, 0);
    frames.push_back(padded);
    for (size_t byte = 0; byte < std::min<size_t>(base.size(), 62); ++byte)
      for (unsigned bit = 0; bit < 8; ++bit) {
        Bytes f = base;
        f[byte] ^= uint8_t(1u << bit);
        frames.push_back(f);
      }
  }
  // IP total length and UDP length around the frame's and each other's.
  const Bytes v4 = v4_roce_frame({}, {}, 40);
  for (int d_ip = -30; d_ip <= 8; ++d_ip)
    for (int d_udp = -30; d_udp <= 8; d_udp += 2) {
      Bytes f = v4;
      const uint16_t total = uint16_t(int(f[16] << 8 | f[17]) + d_ip);
      const uint16_t udp = uint16_t(int(f[38] << 8 | f[39]) + d_udp);
      f[16] = uint8_t(total >> 8), f[17] = uint8_t(total);
      f[38] = uint8_t(udp >> 8), f[39] = uint8_t(udp);
      frames.push_back(f);
    }
  size_t ok = 0;
  for (size_t i = 0; i < frames.size(); ++i) {
    const Bytes f(frames[i].begin(), frames[i].end());  // exact size: ASan sees any overread
    PacketInfo fast, general;
    const ParseStatus want = parse_frame_general(f, general);
    ASSERT_EQ(parse_frame(f, fast), want) << "frame " << i;
    expect_same_info(fast, general, "frame " + std::to_string(i) + " " + to_string(want));
    if (HasFailure()) return;
    ok += want == ParseStatus::ok;
  }
  EXPECT_GT(ok, 500u);
}

// ---- flow label ----------------------------------------------------------------------------

uint32_t crc32c_bitwise(uint32_t crc, const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
  }
  return crc;
}

TEST(FlowLabel, Crc32cMatchesReference) {
  const char* check = "123456789";
  EXPECT_EQ(~crc32c_bitwise(~0u, reinterpret_cast<const uint8_t*>(check), 9), 0xE3069283u);
  uint64_t x = 0x0123456789ABCDEFull;
  uint32_t crc = 0xFFFFFFFFu;
  for (int i = 0; i < 1000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    uint8_t bytes[8];
    std::memcpy(bytes, &x, 8);
    const uint32_t want = crc32c_bitwise(crc, bytes, 8);
    ASSERT_EQ(crc32c_u64_soft(crc, x), want);
    ASSERT_EQ(crc32c_u64(crc, x), want);
    crc = want;
  }
}

TEST(FlowLabel, TwentyBitsNonZeroDeterministicAndSensitive) {
  PacketInfo base;
  ASSERT_EQ(parse(v4_roce_frame(), base), ParseStatus::ok);
  const uint32_t l0 = outer_flow_label(base);
  EXPECT_NE(l0, 0u);
  EXPECT_LE(l0, 0xFFFFFu);
  EXPECT_EQ(outer_flow_label(base), l0);

  PacketInfo v = base;
  v.src.bytes[3] ^= 1;
  EXPECT_NE(outer_flow_label(v), l0);
  v = base;
  v.dst.bytes[0] ^= 0x80;
  EXPECT_NE(outer_flow_label(v), l0);
  v = base;
  v.udp_sport ^= 1;
  EXPECT_NE(outer_flow_label(v), l0);
  v = base;
  v.bth.dest_qp ^= 1;
  EXPECT_NE(outer_flow_label(v), l0);
  // Fields that are not part of the flow do not change it.
  v = base;
  v.bth.bytes[11] ^= 0xFF;  // PSN
  v.ttl ^= 1;
  EXPECT_EQ(outer_flow_label(v), l0);

  // Spread: RNICs vary the source port per QP; 4096 ports should give ~4096 labels in 2^20.
  std::set<uint32_t> labels;
  for (uint32_t port = 0; port < 4096; ++port) {
    v = base;
    v.udp_sport = uint16_t(49152 + port);
    const uint32_t l = outer_flow_label(v);
    ASSERT_NE(l, 0u);
    ASSERT_LE(l, 0xFFFFFu);
    labels.insert(l);
  }
  EXPECT_GT(labels.size(), 4050u);
}

}  // namespace
}  // namespace srv6gw::net
