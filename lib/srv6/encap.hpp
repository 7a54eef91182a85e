// SPDX-License-Identifier: BSD-3-Clause
// SRv6 encapsulation templates (RFC 8986 H.Encaps / H.Encaps.Red, RFC 9800 NEXT-C-SID).
// A template is built once per segment list when a policy is compiled; per packet the data
// plane copies it in front of the inner IP packet and patches payload length, traffic class,
// flow label, inner next header and the SRH Tag. Byte spans only: no DPDK here.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "net/addr.hpp"
#include "net/bytes.hpp"
#include "net/enum_names.hpp"
#include "net/headers.hpp"

namespace srv6gw::srv6 {

inline constexpr unsigned kMaxSids = 16;
inline constexpr unsigned kMaxEncapLen =
    net::kIpv6HeaderLen + net::kSrhFixedLen + net::kIpv6AddrLen * kMaxSids;  // 344

enum class EncapMode : uint8_t {
  encaps,      // H.Encaps: full SRH with every SID
  encaps_red,  // H.Encaps.Red: first SID only in the DA; no SRH for a single SID
  usid,        // NEXT-C-SID: micro-SIDs packed into containers, reduced SRH of containers
};
const char* to_string(EncapMode m);

// NEXT-C-SID format: locator block length and micro-SID length, in bits. The classic uSID
// format is F3216 (32-bit block, 16-bit micro-SIDs: six per container).
struct UsidFormat {
  uint8_t block_bits = 32;
  uint8_t usid_bits = 16;
};

struct TemplateSpec {
  net::Ipv6Addr source;                 // outer source address
  std::span<const net::Ipv6Addr> sids;  // 1..16 SIDs in path order (first = first hop)
  EncapMode mode = EncapMode::encaps;
  UsidFormat usid;   // used in usid mode: each SID is block|usid|zeros
  uint16_t tag = 0;  // SRH Tag = path id (only written when there is an SRH)
  uint8_t hop_limit = 64;
};

// Pre-built outer header. Cache-line aligned so the per-packet copy is a few wide moves.
struct alignas(64) EncapTemplate {
  uint8_t bytes[kMaxEncapLen];
  uint16_t size = 0;                // bytes of outer IPv6 header + SRH (if any)
  uint16_t next_header_offset = 0;  // byte holding the inner protocol (4 or 41)
  uint16_t tag_offset = 0;          // offset of the SRH Tag, 0 when there is no SRH
  uint8_t segment_count = 0;        // entries in the SRH (0 without SRH), or containers in usid
  bool has_srh = false;
  net::Ipv6Addr first_destination;     // outer DA (first SID or first container)
  EncapMode mode = EncapMode::encaps;  // mode the template was built for (diagnostics)
};

// Bytes of an outer header with an SRH of `entries` segments (0: no SRH, the IPv6 header
// alone).
constexpr unsigned header_len_of_srh_entries(unsigned entries) {
  return entries == 0 ? net::kIpv6HeaderLen
                      : net::kIpv6HeaderLen + net::kSrhFixedLen + net::kIpv6AddrLen * entries;
}

#define SRV6GW_BUILD_STATUSES(X)                                                                \
  X(ok, "ok")                                                                                   \
  X(no_sids, "no_sids")             /* empty segment list */                                    \
  X(too_many_sids, "too_many_sids") /* more than kMaxSids (or more than kMaxSids containers) */ \
  X(bad_usid_format, "bad_usid_format") /* block/usid lengths not multiples of 8, zero, or not  \
                                           fitting in 128 bits */                               \
  X(sid_not_in_block,                                                                           \
    "sid_not_in_block") /* usid mode: a SID's locator block differs from the first SID's */     \
  X(sid_not_usid, "sid_not_usid") /* usid mode: bits after the micro-SID are not zero */

enum class BuildStatus : uint8_t { SRV6GW_ENUM_MEMBERS(SRV6GW_BUILD_STATUSES) count_ };
inline constexpr auto kBuildStatusNames = SRV6GW_ENUM_NAMES(SRV6GW_BUILD_STATUSES);
static_assert(kBuildStatusNames.size() == size_t(BuildStatus::count_));
const char* to_string(BuildStatus s);

// Builds the template; on error `out` is unspecified and the status names what is wrong.
// encaps and encaps_red take 1..kMaxSids SIDs; usid takes any number of micro-SIDs that pack
// into at most kMaxSids containers (too_many_sids otherwise).
BuildStatus build_template(const TemplateSpec& spec, EncapTemplate& out);

// Header length a spec will produce (for headroom sizing before building). 0 when the
// count or the uSID format would make build_template fail.
unsigned encap_header_len(unsigned sid_count, EncapMode mode, UsidFormat usid = {});

struct EncapFields {
  uint16_t inner_len = 0;     // bytes of the inner IP packet (total, incl. ICRC)
  uint8_t inner_proto = 4;    // 4 = IPv4, 41 = IPv6
  uint8_t traffic_class = 0;  // DSCP<<2 | ECN, copied from the inner header (RFC 6040)
  uint32_t flow_label = 0;    // 20 bits
  uint16_t tag = 0;           // SRH Tag (path id plus flags)
  // Without an SRH: write `tag` into the low 16 bits of the outer source address instead
  // (engine path-id-in-source, docs/design/engine.md). Ignored when the template has an SRH.
  bool tag_in_source = false;
};

// Path id without an SRH (docs/design/engine.md, "Wire format: path id in the outer source"): the
// same 16-bit value as the SRH Tag (bit 15 reflected, bits 0..14 path id) in the last two
// bytes of the outer source address, which the gateway's source prefix (a /112 or shorter
// locator) leaves free. Offsets from the start of the outer IPv6 header.
inline constexpr unsigned kSourcePathIdOffset = 8 + net::kIpv6AddrLen - 2;  // bytes 22..23
inline void write_source_path_id(uint8_t* ipv6, uint16_t tag) {
  net::store_be16(ipv6 + kSourcePathIdOffset, tag);
}
inline uint16_t read_source_path_id(const uint8_t* ipv6) {
  return net::load_be16(ipv6 + kSourcePathIdOffset);
}
// True when `source` leaves the low 16 bits to the path id (they are zero).
inline bool source_has_path_id_room(const net::Ipv6Addr& source) {
  return source.bytes[14] == 0 && source.bytes[15] == 0;
}

// Fabric receive spreading (engine source-entropy-bits, docs/design/engine.md, "Wire format:
// flow entropy in the outer source"): `bits` (1..16) low bits of the flow label in source
// bits 16..16+bits-1 (counted from the least significant), right above the path-id field,
// so that both can be on together and a receiver reading the path id never sees entropy.
// A far gateway whose NIC hashes only addresses then spreads our flows over its queues.
inline constexpr unsigned kSourceEntropyShift = 16;
inline constexpr unsigned kMaxSourceEntropyBits = 16;
inline constexpr unsigned kSourceEntropyOffset = 8 + net::kIpv6AddrLen - 4;  // bytes 20..23
// The mask of the entropy field within the source's last 32 bits (0 = off).
constexpr uint32_t source_entropy_mask(unsigned bits) {
  return bits == 0 ? 0u : uint32_t(((uint64_t(1) << bits) - 1) << kSourceEntropyShift);
}
// ORs the flow label's entropy bits into the outer source (its field is zero in the template).
inline void write_source_entropy(uint8_t* ipv6, uint32_t mask, uint32_t flow_label) {
  uint8_t* p = ipv6 + kSourceEntropyOffset;
  net::store_be32(p, net::load_be32(p) | (flow_label << kSourceEntropyShift & mask));
}
// True when `source` leaves the entropy field and the path-id field below it free (the low
// 16 + bits bits are zero): the gateway's locator is a /(112 - bits) or shorter.
inline bool source_has_entropy_room(const net::Ipv6Addr& source, unsigned bits) {
  const unsigned zero_bits = kSourceEntropyShift + bits;
  for (unsigned i = 0; i < zero_bits; ++i)
    if (source.bytes[15 - i / 8] >> (i % 8) & 1) return false;
  return true;
}

// Writes `t.size` bytes at `dst` (which must have room) and patches the per-packet fields.
// Never touches the inner packet. The caller keeps t.size - 40 + inner_len <= 65535 (MTU).
// Inline: per packet it is a few 32-byte moves and four stores.
// The source store replaces the template's low 16 source bits (validation keeps them zero).
// Copies the template's `size` bytes and no byte past them (the inner packet follows when
// prepending in place). The sizes of one to six destinations (no SRH: 40; an SRH of k
// entries: 40 + 8 + 16k) are fixed-size copies the compiler turns into a few wide moves;
// larger templates take a loop of 32-byte blocks, the last one overlapping the one before.
inline void copy_template(const EncapTemplate& t, uint8_t* dst) {
  const unsigned size = t.size;  // >= 40 for any built template
  switch (size) {
    case header_len_of_srh_entries(0):
      __builtin_memcpy(dst, t.bytes, header_len_of_srh_entries(0));
      return;
    case header_len_of_srh_entries(1):
      __builtin_memcpy(dst, t.bytes, header_len_of_srh_entries(1));
      return;
    case header_len_of_srh_entries(2):
      __builtin_memcpy(dst, t.bytes, header_len_of_srh_entries(2));
      return;
    case header_len_of_srh_entries(3):
      __builtin_memcpy(dst, t.bytes, header_len_of_srh_entries(3));
      return;
    case header_len_of_srh_entries(4):
      __builtin_memcpy(dst, t.bytes, header_len_of_srh_entries(4));
      return;
    case header_len_of_srh_entries(5):
      __builtin_memcpy(dst, t.bytes, header_len_of_srh_entries(5));
      return;
    default:
      break;
  }
  unsigned i = 0;
  for (; i + 32 <= size; i += 32) __builtin_memcpy(dst + i, t.bytes + i, 32);
  if (i < size) __builtin_memcpy(dst + size - 32, t.bytes + size - 32, 32);
}

inline void write_encap(const EncapTemplate& t, uint8_t* dst, const EncapFields& f) {
  const unsigned size = t.size;
  copy_template(t, dst);
  net::store_be32(dst, 0x60000000u | uint32_t(f.traffic_class) << 20 | (f.flow_label & 0xFFFFF));
  net::store_be16(dst + 4, uint16_t(size - net::kIpv6HeaderLen + f.inner_len));
  dst[t.next_header_offset] = f.inner_proto;
  if (t.has_srh)
    net::store_be16(dst + t.tag_offset, f.tag);
  else if (f.tag_in_source)
    write_source_path_id(dst, f.tag);
}

}  // namespace srv6gw::srv6
