// SPDX-License-Identifier: BSD-3-Clause
// Wire constants in one place: header lengths, ethertypes, IP protocol numbers, well-known
// ports. The parser, the SRv6 builders, the data plane and the offline tools take them from
// here, so a length is never typed twice.
#pragma once

#include <cstddef>
#include <cstdint>

namespace srv6gw::net {

// Header lengths (bytes).
inline constexpr size_t kEthHeaderLen = 14;
inline constexpr size_t kVlanTagLen = 4;
inline constexpr size_t kIpv4MinHeaderLen = 20;  // IHL 5, no options
inline constexpr size_t kIpv6HeaderLen = 40;
inline constexpr size_t kIpv6AddrLen = 16;  // also one SID
inline constexpr size_t kExtMinLen = 8;     // every IPv6 extension header is a multiple of 8
inline constexpr size_t kSrhFixedLen = 8;   // SRH before its segment list
inline constexpr size_t kUdpHeaderLen = 8;
inline constexpr size_t kBthLen = 12;
inline constexpr size_t kRethLen = 16;  // RDMA extended transport header
inline constexpr size_t kAethLen = 4;   // ACK extended transport header
inline constexpr size_t kIcrcLen = 4;
inline constexpr size_t kMaxL3Len = 0xFFFF;
inline constexpr size_t kMinEthFrameLen = 60;  // without FCS: shorter frames are padded

// Ethertypes.
inline constexpr uint16_t kEthTypeIpv4 = 0x0800;
inline constexpr uint16_t kEthTypeIpv6 = 0x86DD;
inline constexpr uint16_t kEthTypeArp = 0x0806;
inline constexpr uint16_t kEthTypeVlan = 0x8100;  // 802.1Q
inline constexpr uint16_t kEthTypeQinQ = 0x88A8;  // 802.1ad

// IP protocol / IPv6 next-header numbers.
inline constexpr uint8_t kProtoHopByHop = 0;
inline constexpr uint8_t kProtoIpv4 = 4;  // IPv4-in-IPv6 (inner next header)
inline constexpr uint8_t kProtoTcp = 6;
inline constexpr uint8_t kProtoUdp = 17;
inline constexpr uint8_t kProtoIpv6 = 41;  // IPv6-in-IPv6
inline constexpr uint8_t kProtoRouting = 43;
inline constexpr uint8_t kProtoFragment = 44;
inline constexpr uint8_t kProtoIcmpv6 = 58;
inline constexpr uint8_t kProtoNoNext = 59;
inline constexpr uint8_t kProtoDestOpts = 60;

// The IPv6 extension headers walked (hop-by-hop, routing, fragment, destination options):
// one test of a bit instead of four compares per header (all four are below 64).
inline constexpr uint64_t kIpv6ExtHeaderBits =
    uint64_t(1) << kProtoHopByHop | uint64_t(1) << kProtoRouting | uint64_t(1) << kProtoFragment |
    uint64_t(1) << kProtoDestOpts;
inline constexpr bool is_ipv6_ext_header(uint8_t nh) {
  return nh < 64 && (kIpv6ExtHeaderBits >> nh & 1) != 0;
}
inline constexpr uint8_t kSrhRoutingType = 4;  // routing type of the SRH (RFC 8754)

// Ports and opcodes.
inline constexpr uint16_t kRoceV2Port = 4791;
inline constexpr uint8_t kBthOpcodeCnp = 0x81;

// Walk bounds.
inline constexpr unsigned kMaxVlanTags = 2;
inline constexpr unsigned kMaxExtHeaders = 8;  // bound on the IPv6 extension-header walk

}  // namespace srv6gw::net
