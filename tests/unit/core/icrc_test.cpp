// SPDX-License-Identifier: BSD-3-Clause
// RoCEv2 ICRC against vectors made by scapy.contrib.roce (IPv4) and by zlib.crc32 over the
// masked packet (IPv6); see make_icrc_vectors.py, which checks the two oracles agree.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>

#include "net/icrc.hpp"
#include "packet_builder.hpp"

namespace srv6gw::net {
namespace {

using test::Bytes;

Bytes from_hex(const std::string& hex) {
  Bytes b;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    b.push_back(uint8_t(std::stoul(hex.substr(i, 2), nullptr, 16)));
  return b;
}

// IP(src=10.0.0.1, dst=10.0.0.2, tos=2, ttl=64, id=0x1234, DF) / UDP(49152 -> 4791) /
// BTH(opcode 4, dqpn 0x123456, psn 0x654321, ackreq, pkey 0xffff) / bytes 1..16 (scapy 2.5)
const Bytes kScapyIpv4 = from_hex(
    "4502003c12344000401114790a0000010a000002c00012b700283c900400ffff0012345680654321"
    "0102030405060708090a0b0c0d0e0f100790988c");
constexpr uint32_t kScapyIpv4Icrc = 0x8c989007;

// IPv6(fd00::1 -> fd00::2, tc 0x0a, fl 0xabcde, hlim 63) / UDP(50000 -> 4791) /
// BTH(opcode 0x0a, dqpn 0xabcd, psn 0x42, pkey 0x8001, becn) / bytes 1..16, ICRC by zlib.
const Bytes kZlibIpv6 = from_hex(
    "60aabcde0028113ffd000000000000000000000000000001fd000000000000000000000000000002"
    "c35012b7002879380a0080014000abcd000000420102030405060708090a0b0c0d0e0f1096ec3f57");
constexpr uint32_t kZlibIpv6Icrc = 0x573fec96;

TEST(Icrc, ScapyIpv4Vector) {
  EXPECT_EQ(roce_icrc(kScapyIpv4, Family::ipv4), kScapyIpv4Icrc);
  EXPECT_TRUE(roce_icrc_valid(kScapyIpv4, Family::ipv4));
  EXPECT_FALSE(roce_icrc_valid(kScapyIpv4, Family::ipv6));
}

TEST(Icrc, ZlibIpv6Vector) {
  EXPECT_EQ(roce_icrc(kZlibIpv6, Family::ipv6), kZlibIpv6Icrc);
  EXPECT_TRUE(roce_icrc_valid(kZlibIpv6, Family::ipv6));
}

TEST(Icrc, VariantFieldsMaskedInvariantFieldsCovered) {
  struct Edit {
    const char* name;
    size_t offset;
    bool variant;
  };
  const Edit v4_edits[] = {
      {"tos", 1, true},
      {"ttl", 8, true},
      {"ip_checksum", 10, true},
      {"udp_checksum", 26, true},
      {"bth_fecn_becn", 32, true},
      {"ip_id", 4, false},
      {"ip_src", 12, false},
      {"udp_sport", 20, false},
      {"opcode", 28, false},
      {"pkey", 30, false},
      {"dest_qp", 35, false},
      {"psn", 39, false},
      {"payload", 45, false},
      {"icrc", 59, false},
  };
  for (const Edit& e : v4_edits) {
    Bytes p = kScapyIpv4;
    p[e.offset] ^= 0x5A;
    EXPECT_EQ(roce_icrc_valid(p, Family::ipv4), e.variant) << e.name;
  }
  const Edit v6_edits[] = {
      {"tc_hi", 0, true},     {"tc_lo_fl", 1, true},      {"flow_label", 3, true},
      {"hop_limit", 7, true}, {"udp_checksum", 47, true}, {"bth_becn", 52, true},
      {"ip_src", 8, false},   {"ip_dst", 39, false},      {"dest_qp", 55, false},
      {"payload", 70, false},
  };
  for (const Edit& e : v6_edits) {
    Bytes p = kZlibIpv6;
    p[e.offset] ^= e.offset == 0 ? 0x05 : 0x5A;  // byte 0: keep the version nibble
    EXPECT_EQ(roce_icrc_valid(p, Family::ipv6), e.variant) << e.name;
  }
}

TEST(Icrc, FillRoundTrip) {
  const std::pair<const Bytes*, Family> vectors[] = {{&kScapyIpv4, Family::ipv4},
                                                     {&kZlibIpv6, Family::ipv6}};
  for (const auto& [vec_ptr, family] : vectors) {
    const Bytes& vec = *vec_ptr;
    Bytes p = vec;
    std::fill(p.end() - 4, p.end(), uint8_t(0));
    EXPECT_FALSE(roce_icrc_valid(p, family));
    roce_icrc_fill(p, family);
    EXPECT_EQ(p, vec);
    // With Ethernet padding after the IP packet the ICRC still sits where the IP header says.
    Bytes padded = vec;
    padded.at(padded.size() - 1) ^= 0xFF;
    padded.resize(padded.size() + 6, 0xEE);
    EXPECT_FALSE(roce_icrc_valid(padded, family));
    roce_icrc_fill(padded, family);
    EXPECT_TRUE(roce_icrc_valid(padded, family));
    EXPECT_TRUE(std::equal(vec.begin(), vec.end(), padded.begin()));
    EXPECT_EQ(padded.back(), 0xEE);
  }
}

TEST(Icrc, FreshPacketsValidAfterFill) {
  // Packets from the builder, with IPv4 options and IPv6 extension headers in the path.
  test::Ipv4Fields f4;
  f4.version_ihl = 0x46;
  Bytes p4 = test::ipv4(f4, test::udp_roce(1000, 4791, {}, 100));
  roce_icrc_fill(p4, Family::ipv4);
  EXPECT_TRUE(roce_icrc_valid(p4, Family::ipv4));
  EXPECT_NE(roce_icrc(p4, Family::ipv4), 0u);
  test::Ipv6Fields f6;
  f6.next_header = 60;
  Bytes p6 = test::ipv6(f6, test::concat({test::ext_opts(17), test::udp_roce(1000, 4791, {}, 33)}));
  roce_icrc_fill(p6, Family::ipv6);
  EXPECT_TRUE(roce_icrc_valid(p6, Family::ipv6));
  p6[45] ^= 1;  // inside the extension header: covered
  EXPECT_FALSE(roce_icrc_valid(p6, Family::ipv6));
}

TEST(Icrc, NotRoceOrTooShort) {
  Bytes short4(kScapyIpv4.begin(), kScapyIpv4.begin() + 40);
  EXPECT_EQ(roce_icrc(short4, Family::ipv4), 0u);
  EXPECT_FALSE(roce_icrc_valid(short4, Family::ipv4));
  Bytes before = short4;
  roce_icrc_fill(short4, Family::ipv4);
  EXPECT_EQ(short4, before);
  Bytes dns = test::ipv4({}, test::udp_roce(1, 53, {}, 16));
  EXPECT_EQ(roce_icrc(dns, Family::ipv4), 0u);
  EXPECT_EQ(roce_icrc({}, Family::ipv6), 0u);
}

}  // namespace
}  // namespace srv6gw::net
