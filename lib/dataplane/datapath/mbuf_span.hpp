// SPDX-License-Identifier: BSD-3-Clause
// Thin adapters from rte_mbuf to the byte spans the packet core works on. Only the first
// segment is contiguous: parsing and header rewriting look at it alone.
#pragma once

#include <rte_mbuf.h>

#include <cstdint>
#include <cstring>
#include <span>

namespace srv6gw::dataplane {

// The first segment's data (where every header we read or write lives).
inline std::span<uint8_t> first_segment(rte_mbuf* m) {
  return {rte_pktmbuf_mtod(m, uint8_t*), m->data_len};
}
inline std::span<const uint8_t> first_segment(const rte_mbuf* m) {
  return {rte_pktmbuf_mtod(m, const uint8_t*), m->data_len};
}

// Copies a whole (possibly chained) packet into `out` (tests, captures; not the hot path).
// Returns the number of bytes copied (min of pkt_len and out.size()).
inline size_t copy_packet(const rte_mbuf* m, std::span<uint8_t> out) {
  size_t done = 0;
  for (const rte_mbuf* seg = m; seg && done < out.size(); seg = seg->next) {
    const size_t n = seg->data_len < out.size() - done ? seg->data_len : out.size() - done;
    std::memcpy(out.data() + done, rte_pktmbuf_mtod(seg, const uint8_t*), n);
    done += n;
  }
  return done;
}

}  // namespace srv6gw::dataplane
