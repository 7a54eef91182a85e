// SPDX-License-Identifier: BSD-3-Clause
#include "net/addr.hpp"

#include <arpa/inet.h>

#include <cstdio>

namespace srv6gw::net {
namespace {

// inet_pton wants a NUL-terminated string; string_view is not. The longest valid textual
// IPv6 address (with an embedded IPv4 tail) is 45 characters.
constexpr size_t kMaxAddrText = 64;

bool copy_text(std::string_view text, char (&buf)[kMaxAddrText]) {
  if (text.empty() || text.size() >= kMaxAddrText) return false;
  if (text.find('\0') != std::string_view::npos) return false;
  std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';
  return true;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::optional<Ipv6Addr> parse_ipv6(std::string_view text) {
  char buf[kMaxAddrText];
  if (!copy_text(text, buf)) return std::nullopt;
  Ipv6Addr a;
  if (inet_pton(AF_INET6, buf, a.bytes.data()) != 1) return std::nullopt;
  return a;
}

std::optional<Ipv4Addr> parse_ipv4(std::string_view text) {
  char buf[kMaxAddrText];
  if (!copy_text(text, buf)) return std::nullopt;
  Ipv4Addr a;
  if (inet_pton(AF_INET, buf, a.bytes.data()) != 1) return std::nullopt;
  return a;
}

std::optional<IpAddr> parse_ip(std::string_view text) {
  if (text.find(':') != std::string_view::npos) {
    if (auto a = parse_ipv6(text)) return IpAddr::v6(*a);
    return std::nullopt;
  }
  if (auto a = parse_ipv4(text)) return IpAddr::v4(*a);
  return std::nullopt;
}

// Six groups of two hex digits separated by ':' (or '-', used consistently).
std::optional<MacAddr> parse_mac(std::string_view text) {
  if (text.size() != 17) return std::nullopt;
  const char sep = text[2];
  if (sep != ':' && sep != '-') return std::nullopt;
  MacAddr m;
  for (size_t i = 0; i < 6; ++i) {
    const size_t pos = i * 3;
    if (i > 0 && text[pos - 1] != sep) return std::nullopt;
    const int hi = hex_value(text[pos]);
    const int lo = hex_value(text[pos + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    m.bytes[i] = uint8_t(hi << 4 | lo);
  }
  return m;
}

std::string to_string(const Ipv6Addr& a) {
  char buf[INET6_ADDRSTRLEN];
  if (inet_ntop(AF_INET6, a.bytes.data(), buf, sizeof buf) == nullptr) return {};
  return buf;
}

std::string to_string(const Ipv4Addr& a) {
  char buf[INET_ADDRSTRLEN];
  if (inet_ntop(AF_INET, a.bytes.data(), buf, sizeof buf) == nullptr) return {};
  return buf;
}

std::string to_string(const IpAddr& a) {
  switch (a.family) {
    case Family::ipv4:
      return to_string(a.as_v4());
    case Family::ipv6:
      return to_string(a.as_v6());
    case Family::none:
      break;
  }
  return "none";
}

std::string to_string(const MacAddr& a) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", a.bytes[0], a.bytes[1],
                a.bytes[2], a.bytes[3], a.bytes[4], a.bytes[5]);
  return buf;
}

}  // namespace srv6gw::net
