// SPDX-License-Identifier: BSD-3-Clause
#include <gtest/gtest.h>

#include "net/addr.hpp"

namespace srv6gw::net {
namespace {

TEST(Addr, Ipv6ParseFormat) {
  const auto a = parse_ipv6("fc00:1::e");
  ASSERT_TRUE(a);
  const std::array<uint8_t, 16> want = {0xfc, 0x00, 0x00, 0x01, 0, 0, 0, 0,
                                        0,    0,    0,    0,    0, 0, 0, 0x0e};
  EXPECT_EQ(a->bytes, want);
  EXPECT_EQ(to_string(*a), "fc00:1::e");
  EXPECT_EQ(to_string(*parse_ipv6("FC00:0000:0000:0000:0000:0000:0000:0001")), "fc00::1");
  EXPECT_EQ(to_string(*parse_ipv6("::ffff:10.1.2.3")), "::ffff:10.1.2.3");
  EXPECT_EQ(to_string(Ipv6Addr{}), "::");
  for (const char* bad : {"", "fc00::1::2", "fc00:1", "10.0.0.1", "fc00::g", " fc00::1",
                          "fc00::1/64", "1:2:3:4:5:6:7:8:9"})
    EXPECT_FALSE(parse_ipv6(bad)) << bad;
  EXPECT_FALSE(parse_ipv6(std::string(100, 'a')));
  // Not NUL-terminated views are handled by length, not by reading past them.
  const std::string longer = "fc00::1234";
  EXPECT_EQ(to_string(*parse_ipv6(std::string_view(longer).substr(0, 7))), "fc00::1");
  EXPECT_FALSE(parse_ipv6(std::string_view("fc00::1\0x", 9)));
}

TEST(Addr, Ipv4ParseFormat) {
  const auto a = parse_ipv4("192.168.0.254");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->bytes, (std::array<uint8_t, 4>{192, 168, 0, 254}));
  EXPECT_EQ(a->host_order(), 0xC0A800FEu);
  EXPECT_EQ(to_string(*a), "192.168.0.254");
  for (const char* bad : {"", "1.2.3", "1.2.3.4.5", "256.0.0.1", "1.2.3.4 ", "::1", "a.b.c.d"})
    EXPECT_FALSE(parse_ipv4(bad)) << bad;
}

TEST(Addr, IpAddrFamilies) {
  const auto v4 = parse_ip("10.0.0.1");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->family, Family::ipv4);
  EXPECT_EQ(v4->bytes[0], 10);
  for (size_t i = 4; i < 16; ++i) EXPECT_EQ(v4->bytes[i], 0);
  EXPECT_EQ(to_string(*v4), "10.0.0.1");
  EXPECT_EQ(v4->as_v4().host_order(), 0x0A000001u);
  const auto v6 = parse_ip("2001:db8::1");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->family, Family::ipv6);
  EXPECT_EQ(to_string(*v6), "2001:db8::1");
  EXPECT_EQ(v6->as_v6(), *parse_ipv6("2001:db8::1"));
  EXPECT_NE(*v4, *v6);
  EXPECT_LT(*v4, *v6);  // family orders first
  EXPECT_FALSE(parse_ip("nonsense"));
  EXPECT_FALSE(parse_ip("1.2.3.4:80"));
  EXPECT_EQ(to_string(IpAddr{}), "none");
}

TEST(Addr, MacParseFormat) {
  const auto m = parse_mac("02:1A:bc:00:ff:09");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->bytes, (std::array<uint8_t, 6>{0x02, 0x1a, 0xbc, 0x00, 0xff, 0x09}));
  EXPECT_EQ(to_string(*m), "02:1a:bc:00:ff:09");
  EXPECT_EQ(*parse_mac("02-1a-bc-00-ff-09"), *m);
  for (const char* bad : {"", "02:1a:bc:00:ff", "02:1a:bc:00:ff:09:", "02:1a-bc:00:ff:09",
                          "02:1a:bc:00:ff:0g", "021a.bc00.ff09", "02:1a:bc:00:ff:9 "})
    EXPECT_FALSE(parse_mac(bad)) << bad;
}

}  // namespace
}  // namespace srv6gw::net
