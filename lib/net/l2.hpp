// SPDX-License-Identifier: BSD-3-Clause
// The one walk over a frame's Ethernet header and VLAN/QinQ tags. The parser (parse_frame),
// the data plane's fabric side and srv6gw-pcap's decap all start here, so the three agree on
// what a truncated tag or one tag too many is.
#pragma once

#include <cstddef>
#include <cstdint>

#include "net/bytes.hpp"
#include "net/headers.hpp"
#include "net/parse.hpp"

namespace srv6gw::net {

// Where the L3 header of a frame starts and which ethertype announces it.
struct L2Header {
  uint16_t ethertype = 0;
  uint16_t l3_offset = 0;
};

// The one walk over Ethernet and up to kMaxVlanTags 802.1Q / 802.1ad tags, shared by
// parse_frame, the data plane's fabric side and srv6gw-pcap. Returns ok (l2 filled),
// truncated_eth, truncated_vlan (the frame ends inside a tag) or too_many_vlans (one tag more
// than kMaxVlanTags, whether complete or not). `on_tag(index, tpid, tci)` sees each tag in
// order; callers that do not record tags pass a no-op and the compiler drops it.
template <typename OnTag>
[[gnu::always_inline]] inline ParseStatus walk_l2(const uint8_t* p, size_t len, L2Header& l2,
                                                  OnTag&& on_tag) {
  if (__builtin_expect(len < kEthHeaderLen, 0)) return ParseStatus::truncated_eth;
  size_t off = 12;  // ethertype / first TPID
  uint16_t ethertype = load_be16(p + off);
  for (unsigned n = 0; __builtin_expect(ethertype == kEthTypeVlan || ethertype == kEthTypeQinQ, 0);
       ++n) {
    if (n == kMaxVlanTags) return ParseStatus::too_many_vlans;
    if (off + 2 + kVlanTagLen > len) return ParseStatus::truncated_vlan;
    on_tag(n, ethertype, load_be16(p + off + 2));
    off += kVlanTagLen;
    ethertype = load_be16(p + off);
  }
  l2.ethertype = ethertype;
  l2.l3_offset = uint16_t(off + 2);
  return ParseStatus::ok;
}

}  // namespace srv6gw::net
