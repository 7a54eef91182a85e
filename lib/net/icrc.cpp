// SPDX-License-Identifier: BSD-3-Clause
#include "net/icrc.hpp"

#include <zlib.h>

#include <cstring>

#include "net/parse.hpp"

namespace srv6gw::net {
namespace {

// zlib's CRC-32, chained: crc_update(crc_update(0, a), b) = crc32(a + b).
uint32_t crc_update(uint32_t crc, const uint8_t* p, size_t len) {
  return uint32_t(crc32_z(crc, p, len));
}

}  // namespace

uint32_t roce_icrc(std::span<const uint8_t> ip_packet, Family family) {
  PacketInfo info;
  if (parse_ip(ip_packet, family, info) != ParseStatus::ok) return 0;
  const uint8_t* p = ip_packet.data();
  const size_t l4 = info.l4_offset;
  const size_t icrc_off = size_t(info.l3_len) - kIcrcLen;

  uint32_t crc = 0;
  static constexpr uint8_t kOnes[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
  crc = crc_update(crc, kOnes, sizeof kOnes);  // the LRH of IB, replaced by ones in RoCEv2

  // IP header with its variant fields (rewritten by routers) masked to ones.
  if (family == Family::ipv4) {
    uint8_t hdr[60];
    const size_t ihl_bytes = l4;  // parse_ip starts at 0: UDP follows the IPv4 header
    std::memcpy(hdr, p, ihl_bytes);
    hdr[1] = 0xFF;             // TOS
    hdr[8] = 0xFF;             // TTL
    hdr[10] = hdr[11] = 0xFF;  // header checksum
    crc = crc_update(crc, hdr, ihl_bytes);
  } else {
    uint8_t hdr[40];
    std::memcpy(hdr, p, 40);
    hdr[0] |= 0x0F;                   // traffic class (low nibble of byte 0 ...)
    hdr[1] = hdr[2] = hdr[3] = 0xFF;  // ... rest of traffic class and the flow label
    hdr[7] = 0xFF;                    // hop limit
    crc = crc_update(crc, hdr, 40);
    crc = crc_update(crc, p + 40, l4 - 40);  // extension headers, if any, as they are
  }
  // UDP header + BTH with the UDP checksum and the BTH byte after P_Key (FECN/BECN) masked.
  uint8_t udp_bth[8 + kBthLen];
  std::memcpy(udp_bth, p + l4, sizeof udp_bth);
  udp_bth[6] = udp_bth[7] = 0xFF;
  udp_bth[8 + 4] = 0xFF;
  crc = crc_update(crc, udp_bth, sizeof udp_bth);
  const size_t rest = l4 + sizeof udp_bth;
  crc = crc_update(crc, p + rest, icrc_off - rest);
  return crc;
}

bool roce_icrc_valid(std::span<const uint8_t> ip_packet, Family family) {
  PacketInfo info;
  if (parse_ip(ip_packet, family, info) != ParseStatus::ok) return false;
  const uint8_t* f = ip_packet.data() + info.l3_len - kIcrcLen;
  const uint32_t stored =
      uint32_t(f[0]) | uint32_t(f[1]) << 8 | uint32_t(f[2]) << 16 | uint32_t(f[3]) << 24;
  return stored == roce_icrc(ip_packet, family);
}

void roce_icrc_fill(std::span<uint8_t> ip_packet, Family family) {
  PacketInfo info;
  if (parse_ip(ip_packet, family, info) != ParseStatus::ok) return;
  const uint32_t icrc = roce_icrc(ip_packet, family);
  uint8_t* f = ip_packet.data() + info.l3_len - kIcrcLen;
  f[0] = uint8_t(icrc);
  f[1] = uint8_t(icrc >> 8);
  f[2] = uint8_t(icrc >> 16);
  f[3] = uint8_t(icrc >> 24);
}

}  // namespace srv6gw::net
