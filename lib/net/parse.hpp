// SPDX-License-Identifier: BSD-3-Clause
// RoCEv2 classification on byte spans: Ethernet, up to two VLAN tags, IPv4/IPv6 (with an
// extension-header walk), UDP 4791 and the InfiniBand BTH. No DPDK, no allocation: the data
// plane calls it per packet and the unit tests call it on hand-built buffers.
#pragma once

#include <cstdint>
#include <span>

#include "net/addr.hpp"
#include "net/bytes.hpp"
#include "net/enum_names.hpp"
#include "net/hash.hpp"
#include "net/headers.hpp"

namespace srv6gw::net {

// Every outcome of classification has a name: the data plane counts packets per reason.
#define SRV6GW_PARSE_STATUSES(X)                                                                   \
  X(ok, "ok")                         /* a RoCEv2 packet, every field of PacketInfo valid */       \
  X(not_ip, "not_ip")                 /* neither IPv4 nor IPv6 (ARP, LLDP, ...): pass-through */   \
  X(not_udp, "not_udp")               /* IP but not UDP (TCP, ICMP, ...): pass-through */          \
  X(not_roce, "not_roce")             /* UDP but destination port is not 4791: pass-through */     \
  X(truncated_eth, "truncated_eth")   /* shorter than an Ethernet header */                        \
  X(truncated_vlan, "truncated_vlan") /* VLAN tag cut short */                                     \
  X(too_many_vlans, "too_many_vlans") /* more than two stacked tags */                             \
  X(truncated_ipv4, "truncated_ipv4") /* shorter than the IPv4 header (or its IHL) */              \
  X(bad_ipv4_version, "bad_ipv4_version")     /* version nibble is not 4 under 0x0800 */           \
  X(bad_ipv4_ihl, "bad_ipv4_ihl")             /* IHL < 5 */                                        \
  X(bad_ipv4_length, "bad_ipv4_length")       /* total length < IHL*4 or beyond the frame */       \
  X(truncated_ipv6, "truncated_ipv6")         /* shorter than the fixed IPv6 header */             \
  X(bad_ipv6_version, "bad_ipv6_version")     /* version nibble is not 6 under 0x86DD */           \
  X(bad_ipv6_length, "bad_ipv6_length")       /* payload length beyond the frame */                \
  X(truncated_ext, "truncated_ext")           /* an extension header runs past the IPv6 payload */ \
  X(ext_chain_too_long, "ext_chain_too_long") /* more than kMaxExtHeaders ext headers */           \
  X(fragment, "fragment")                     /* IPv4/IPv6 fragment: RoCEv2 is never fragmented */ \
  X(truncated_udp, "truncated_udp")           /* shorter than a UDP header */                      \
  X(bad_udp_length, "bad_udp_length")         /* UDP length < 8 or beyond the IP payload */        \
  X(truncated_bth, "truncated_bth")           /* UDP 4791 payload shorter than BTH + ICRC */       \
  X(bad_bth_tver, "bad_bth_tver")             /* BTH transport header version is not 0 */

enum class ParseStatus : uint8_t { SRV6GW_ENUM_MEMBERS(SRV6GW_PARSE_STATUSES) count_ };
inline constexpr auto kParseStatusNames = SRV6GW_ENUM_NAMES(SRV6GW_PARSE_STATUSES);
static_assert(kParseStatusNames.size() == size_t(ParseStatus::count_));
const char* to_string(ParseStatus s);

// The InfiniBand base transport header. The data plane reads the opcode and DestQP of every
// packet: those two are fields, filled by the parser. The other fields are read from the
// header's bytes, kept as received, by whoever asks (tools, tests, fuzzers): filling them
// all per packet took ~35 of the parser's ~107 instructions.
struct Bth {
  uint8_t opcode = 0;
  uint32_t dest_qp = 0;                                       // 24 bits
  uint8_t bytes[kBthLen] = {};                                // the BTH as received (network order)
  bool solicited_event() const { return bytes[1] >> 7 & 1; }  // SE
  bool mig_req() const { return bytes[1] >> 6 & 1; }          // M
  uint8_t pad_count() const { return uint8_t(bytes[1] >> 4 & 0x3); }  // 2 bits
  uint8_t tver() const { return uint8_t(bytes[1] & 0xF); }            // 4 bits
  uint16_t pkey() const { return uint16_t(bytes[2] << 8 | bytes[3]); }
  bool fecn() const { return bytes[4] >> 7 & 1; }
  bool becn() const { return bytes[4] >> 6 & 1; }
  bool ack_req() const { return bytes[8] >> 7 & 1; }  // A
  uint32_t psn() const {                              // 24 bits
    return uint32_t(bytes[9]) << 16 | uint32_t(bytes[10]) << 8 | bytes[11];
  }
  friend bool operator==(const Bth&, const Bth&) = default;
};

// Classification record. Offsets are from the start of the frame.
struct PacketInfo {
  Family family = Family::none;
  uint8_t vlan_count = 0;
  uint16_t vlan_tci[kMaxVlanTags] = {};
  uint16_t vlan_tpid[kMaxVlanTags] = {};
  uint16_t l3_offset = 0;   // start of the IP header (= L2 length)
  uint16_t l3_len = 0;      // IP total length (IPv4 total length, IPv6 40 + payload length)
  uint16_t l4_offset = 0;   // start of UDP
  uint16_t bth_offset = 0;  // start of the BTH
  uint8_t l4_proto = 0;     // final next header / protocol
  IpAddr src;
  IpAddr dst;
  uint8_t dscp = 0;  // 6 bits
  uint8_t ecn = 0;   // 2 bits
  uint8_t ttl = 0;   // TTL or hop limit
  uint32_t ipv6_flow_label = 0;
  bool has_ip_options = false;  // IPv4 IHL > 5
  bool fragment = false;
  uint16_t udp_sport = 0;
  uint16_t udp_dport = 0;
  Bth bth;
  bool is_cnp = false;  // BTH opcode 0x81
  // Field by field (the fast path and the general walk of parse_frame give equal records).
  friend bool operator==(const PacketInfo&, const PacketInfo&) = default;
};

// Classifies a frame that starts with an Ethernet header. On ok, every field is set; on a
// pass-through status (not_ip, not_udp, not_roce) the fields up to the failing layer are set.
// The common frame (untagged Ethernet, IPv4 without options, UDP 4791, BTH) takes a fast
// path that checks and fills the same as the general walk; every other frame takes the walk.
ParseStatus parse_frame(std::span<const uint8_t> frame, PacketInfo& info);

// parse_frame without the fast path: the general walk for every frame. Same results; the
// tests and fuzz_parse compare the two.
ParseStatus parse_frame_general(std::span<const uint8_t> frame, PacketInfo& info);

// The same starting at an IP header (used for the inner packet after decapsulation).
// `family` selects IPv4 or IPv6. Offsets in `info` are relative to the start of `packet`.
ParseStatus parse_ip(std::span<const uint8_t> packet, Family family, PacketInfo& info);

// False only when parse_ip(packet, family) cannot be ok with is_cnp set: a quick look at the
// usual layout (IPv4 without options or IPv6 with UDP right after its header) for the UDP
// port and BTH opcode; true for anything it does not look into. The decap taps parse the
// inner packet only when it may be a CNP (or carries a CE mark): ~85 instructions a packet
// spared on data traffic. fuzz_parse checks the promise on every input.
inline bool may_be_cnp(std::span<const uint8_t> packet, Family family) {
  const uint8_t* p = packet.data();
  const size_t len = packet.size();
  size_t l4;
  if (family == Family::ipv4) {
    if (len < kIpv4MinHeaderLen || p[0] != 0x45) return true;  // options: not looked into
    if (p[9] != kProtoUdp) return false;                       // parse_ip: not_udp
    l4 = kIpv4MinHeaderLen;
  } else if (family == Family::ipv6) {
    if (len < kIpv6HeaderLen || p[6] != kProtoUdp) return true;  // extension headers, ...
    l4 = kIpv6HeaderLen;
  } else {
    return false;  // parse_ip: not_ip
  }
  // A CNP parses with its UDP header at l4 and the BTH right after it, inside the packet.
  const size_t bth = l4 + kUdpHeaderLen;
  if (len < bth + 1) return false;
  return load_be16(p + l4 + 2) == kRoceV2Port && p[bth] == kBthOpcodeCnp;
}

// 20-bit non-zero flow label for the outer header, from inner src, dst, UDP source port and
// DestQP, so that the fabric's ECMP keeps the entropy the RNIC put into the flow: CRC32C
// from seed 0xFFFFFFFF over src, dst, then (sport << 32 | DestQP), spread by a multiply.
uint32_t outer_flow_label(const PacketInfo& info);

// The same from crc32c_pair(src, dst) (net/hash.hpp), which the data plane computes once per
// packet for all its address-pair hashes.
inline uint32_t outer_flow_label_from_pair_crc(uint32_t pair_crc, uint16_t udp_sport,
                                               uint32_t dest_qp) {
  constexpr uint32_t kSeedZeros = crc32c_zeros_32(0xFFFFFFFFu);
  const uint32_t h = crc32c_u64(pair_crc ^ kSeedZeros, uint64_t(udp_sport) << 32 | dest_qp);
  // CRC is linear; a multiply spreads every input bit into the 20 bits kept.
  const uint32_t label = (h * 0x9E3779B1u) >> 12;
  return label != 0 ? label : 1;  // 0 means "no flow label" to the fabric (RFC 6437)
}

}  // namespace srv6gw::net
