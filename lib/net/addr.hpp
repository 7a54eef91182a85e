// SPDX-License-Identifier: BSD-3-Clause
// Address value types shared by the packet core, policies and configuration.
// Plain bytes in network order so they can be copied straight into headers.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace srv6gw::net {

struct Ipv6Addr {
  std::array<uint8_t, 16> bytes{};
  friend bool operator==(const Ipv6Addr&, const Ipv6Addr&) = default;
  friend auto operator<=>(const Ipv6Addr&, const Ipv6Addr&) = default;
};

struct Ipv4Addr {
  std::array<uint8_t, 4> bytes{};
  uint32_t host_order() const {
    return uint32_t(bytes[0]) << 24 | uint32_t(bytes[1]) << 16 | uint32_t(bytes[2]) << 8 | bytes[3];
  }
  friend bool operator==(const Ipv4Addr&, const Ipv4Addr&) = default;
  friend auto operator<=>(const Ipv4Addr&, const Ipv4Addr&) = default;
};

enum class Family : uint8_t { none = 0, ipv4 = 4, ipv6 = 6 };

// An IPv4 or IPv6 address. IPv4 occupies bytes[0..3], the rest is zero, so that a
// family + 16 bytes is a complete, hashable key.
struct IpAddr {
  Family family = Family::none;
  std::array<uint8_t, 16> bytes{};

  static IpAddr v4(const Ipv4Addr& a) {
    IpAddr r;
    r.family = Family::ipv4;
    std::memcpy(r.bytes.data(), a.bytes.data(), 4);
    return r;
  }
  static IpAddr v6(const Ipv6Addr& a) {
    IpAddr r;
    r.family = Family::ipv6;
    r.bytes = a.bytes;
    return r;
  }
  Ipv4Addr as_v4() const {
    Ipv4Addr a;
    std::memcpy(a.bytes.data(), bytes.data(), 4);
    return a;
  }
  Ipv6Addr as_v6() const { return Ipv6Addr{bytes}; }
  friend bool operator==(const IpAddr&, const IpAddr&) = default;
  friend auto operator<=>(const IpAddr&, const IpAddr&) = default;
};

struct MacAddr {
  std::array<uint8_t, 6> bytes{};
  friend bool operator==(const MacAddr&, const MacAddr&) = default;
};

// Text conversions (inet_pton/inet_ntop based). Parsing returns nullopt on bad input.
std::optional<Ipv6Addr> parse_ipv6(std::string_view text);
std::optional<Ipv4Addr> parse_ipv4(std::string_view text);
std::optional<IpAddr> parse_ip(std::string_view text);
std::optional<MacAddr> parse_mac(std::string_view text);
std::string to_string(const Ipv6Addr& a);
std::string to_string(const Ipv4Addr& a);
std::string to_string(const IpAddr& a);
std::string to_string(const MacAddr& a);

}  // namespace srv6gw::net
