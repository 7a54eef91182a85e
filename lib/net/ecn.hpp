// SPDX-License-Identifier: BSD-3-Clause
// The ECN field of IPv4 and IPv6 headers (RFC 3168): its code points and how to rewrite it in
// place. Shared by decapsulation (RFC 6040 egress, srv6/decap.cpp) and the worker's
// congestion marking of held frames (apps/srv6gw/tx_queue.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "net/bytes.hpp"
#include "net/headers.hpp"
#include "net/l2.hpp"

namespace srv6gw::net {

inline constexpr uint8_t kEcnNotEct = 0;
inline constexpr uint8_t kEcnEct1 = 1;
inline constexpr uint8_t kEcnEct0 = 2;
inline constexpr uint8_t kEcnCe = 3;

// Rewrites the ECN bits of an IPv4 header with an incremental checksum update (RFC 1624
// eqn. 3) of the 16-bit word holding version/IHL and TOS.
inline void set_ipv4_ecn(uint8_t* ip, uint8_t ecn) {
  const uint16_t old_word = load_be16(ip);
  ip[1] = uint8_t((ip[1] & 0xFC) | ecn);
  const uint16_t new_word = load_be16(ip);
  uint32_t sum = uint32_t(uint16_t(~load_be16(ip + 10))) + uint16_t(~old_word) + new_word;
  sum = (sum & 0xFFFF) + (sum >> 16);
  sum = (sum & 0xFFFF) + (sum >> 16);
  store_be16(ip + 10, uint16_t(~sum));
}

inline void set_ipv6_ecn(uint8_t* ip, uint8_t ecn) {
  ip[1] = uint8_t((ip[1] & 0xCF) | ecn << 4);  // TC bits 1..0 are bits 5..4 of byte 1
}

// Sets CE on the first IP header of an Ethernet frame (`len` bytes at `frame`) when it is
// ECT(0) or ECT(1), as a congested switch queue marks; not-ECT and CE frames are left alone.
// Returns true when it marked.
inline bool mark_ce_if_ect(uint8_t* frame, size_t len) {
  L2Header l2;
  if (walk_l2(frame, len, l2, [](unsigned, uint16_t, uint16_t) {}) != ParseStatus::ok) return false;
  uint8_t* ip = frame + l2.l3_offset;
  if (l2.ethertype == kEthTypeIpv6 && l2.l3_offset + kIpv6HeaderLen <= len) {
    const uint8_t ecn = (ip[1] >> 4) & 3;
    if (ecn == kEcnEct0 || ecn == kEcnEct1) {
      set_ipv6_ecn(ip, kEcnCe);
      return true;
    }
  } else if (l2.ethertype == kEthTypeIpv4 && l2.l3_offset + kIpv4MinHeaderLen <= len) {
    const uint8_t ecn = ip[1] & 3;
    if (ecn == kEcnEct0 || ecn == kEcnEct1) {
      set_ipv4_ecn(ip, kEcnCe);
      return true;
    }
  }
  return false;
}

}  // namespace srv6gw::net
