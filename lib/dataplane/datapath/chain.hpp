// SPDX-License-Identifier: BSD-3-Clause
// Frames of several mbuf segments (jumbo frames, scattered RX): the pipeline reads and
// rewrites headers in the first segment only, so a chain is made to hold its headers there
// (a bounded pull-up) and is cut to length across segments. Cold paths: one-segment frames
// never call these (docs/design/vlan-jumbo.md).
#pragma once

#include <rte_mbuf.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "net/headers.hpp"

namespace srv6gw::dataplane {

// Bytes the first segment should hold before headers are read: Ethernet with two tags (22),
// outer IPv6 (40), an SRH of 16 SIDs (264), inner IPv4 with options (60), UDP and BTH (20)
// is 406; a power of two above it.
inline constexpr uint32_t kChainHeaderBytes = 512;

// Moves bytes from the following segments into the first segment's tailroom until it holds
// min(want, pkt_len) bytes or its tailroom is used up; segments left empty are freed. A NIC
// that scatters fills the first segment to its buffer size (so this moves nothing); it is for
// producers that chain a short first segment. At most `want` bytes are copied.
[[gnu::cold]] inline void pull_up_headers(rte_mbuf* m, uint32_t want = kChainHeaderBytes) {
  const uint32_t target = std::min(want, m->pkt_len);
  while (m->data_len < target && m->next != nullptr) {
    rte_mbuf* seg = m->next;
    const uint32_t room = rte_pktmbuf_tailroom(m);
    if (room == 0) break;
    const uint16_t n =
        uint16_t(std::min({uint32_t(target - m->data_len), room, uint32_t(seg->data_len)}));
    std::memcpy(rte_pktmbuf_mtod_offset(m, uint8_t*, m->data_len), rte_pktmbuf_mtod(seg, uint8_t*),
                n);
    m->data_len = uint16_t(m->data_len + n);
    seg->data_off = uint16_t(seg->data_off + n);
    seg->data_len = uint16_t(seg->data_len - n);
    if (seg->data_len == 0) {
      m->next = seg->next;
      --m->nb_segs;
      seg->next = nullptr;
      rte_pktmbuf_free_seg(seg);
    }
  }
}

// Cuts a (possibly chained) packet to `len` bytes (len <= pkt_len, len > 0): the segment
// holding the new end is shortened and the segments after it are freed.
inline void trim_packet(rte_mbuf* m, uint32_t len) {
  if (len >= m->pkt_len) return;
  m->pkt_len = len;
  uint32_t left = len;
  uint16_t segs = 1;
  rte_mbuf* seg = m;
  while (left > seg->data_len) {
    left -= seg->data_len;
    seg = seg->next;
    ++segs;
  }
  seg->data_len = uint16_t(left);
  if (seg->next != nullptr) {
    rte_pktmbuf_free(seg->next);
    seg->next = nullptr;
  }
  m->nb_segs = segs;
}

// True when the IP, UDP and BTH headers of the IP packet at `ip` (`avail` contiguous bytes)
// lie within those bytes, so that the parser, given the packet's whole length, reads nothing
// beyond them: IPv4 with its options, or IPv6 directly followed by UDP (a chained packet with
// IPv6 extension headers is not parsed).
inline bool roce_headers_fit(const uint8_t* ip, size_t avail, bool ipv6) {
  constexpr size_t kUdpBth = net::kUdpHeaderLen + net::kBthLen;
  if (ipv6) return avail >= net::kIpv6HeaderLen + kUdpBth && ip[6] == net::kProtoUdp;
  return avail >= net::kIpv4MinHeaderLen && size_t(ip[0] & 0xF) * 4 + kUdpBth <= avail;
}

}  // namespace srv6gw::dataplane
