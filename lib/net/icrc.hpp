// SPDX-License-Identifier: BSD-3-Clause
// RoCEv2 invariant CRC (IBTA Annex A17): CRC-32 over 8 bytes of 0xff followed by the IP
// packet with the variant fields set to all ones (IPv4: TOS, TTL, header checksum; IPv6:
// traffic class, flow label, hop limit; UDP checksum; BTH reserved byte after P_Key),
// excluding the 4-byte ICRC itself, which is stored little-endian at the end of the packet.
// The CRC is zlib's. Offline tools and tests only (srv6gw_icrc_dep): the data path never
// computes an ICRC, it carries the packet's own through encapsulation.
#pragma once

#include <cstdint>
#include <span>

#include "net/addr.hpp"

namespace srv6gw::net {

// Computes the ICRC of `ip_packet` (starting at the IP header, ending with the ICRC field).
// Returns 0 if the span is too short to hold IP + UDP + BTH + ICRC.
uint32_t roce_icrc(std::span<const uint8_t> ip_packet, Family family);

// True when the last four bytes of `ip_packet` hold its correct ICRC.
bool roce_icrc_valid(std::span<const uint8_t> ip_packet, Family family);

// Writes the correct ICRC into the last four bytes of `ip_packet`.
void roce_icrc_fill(std::span<uint8_t> ip_packet, Family family);

// The ICRC sits at the end of the IP packet as its header gives it (total length / payload
// length), so a span that also holds Ethernet padding works for all three functions above;
// a packet that does not parse as RoCEv2 has no ICRC (0 / false / left untouched).

}  // namespace srv6gw::net
