// SPDX-License-Identifier: BSD-3-Clause
#include "srv6/encap.hpp"

#include <cstring>

#include "net/parse.hpp"

namespace srv6gw::srv6 {

const char* to_string(EncapMode m) {
  switch (m) {
    case EncapMode::encaps:
      return "encaps";
    case EncapMode::encaps_red:
      return "encaps_red";
    case EncapMode::usid:
      return "usid";
  }
  return "unknown";
}

const char* to_string(BuildStatus s) {
  return net::enum_name(kBuildStatusNames, s);
}

namespace {

bool usid_format_valid(UsidFormat f) {
  return f.block_bits != 0 && f.usid_bits != 0 && f.block_bits % 8 == 0 && f.usid_bits % 8 == 0 &&
         unsigned(f.block_bits) + f.usid_bits <= 128;
}

// Micro-SIDs that fit in one container after the locator block.
unsigned usids_per_container(UsidFormat f) {
  return (128u - f.block_bits) / f.usid_bits;
}

// Number of 128-bit destinations (SIDs or uSID containers) a list of `sid_count` produces,
// 0 when the spec is not buildable.
unsigned destination_count(unsigned sid_count, EncapMode mode, UsidFormat usid) {
  if (sid_count == 0) return 0;
  if (mode != EncapMode::usid) return sid_count <= kMaxSids ? sid_count : 0;
  if (!usid_format_valid(usid)) return 0;
  const unsigned per = usids_per_container(usid);
  const unsigned containers = (sid_count + per - 1) / per;
  return containers <= kMaxSids ? containers : 0;
}

// SRH entries for `destinations` 128-bit destinations: H.Encaps carries every one,
// the reduced forms (encaps_red, usid) leave the first one in the DA only.
unsigned srh_entries(unsigned destinations, EncapMode mode) {
  return mode == EncapMode::encaps ? destinations : destinations - 1;
}

// Packs the micro-SIDs of `sids` (each block|usid|zeros) into containers
// block|usid_1|...|usid_k|zeros; `count` receives the number of containers.
BuildStatus pack_usids(std::span<const net::Ipv6Addr> sids, UsidFormat f,
                       net::Ipv6Addr (&containers)[kMaxSids], unsigned& count) {
  if (!usid_format_valid(f)) return BuildStatus::bad_usid_format;
  const unsigned block = f.block_bits / 8;
  const unsigned usid = f.usid_bits / 8;
  const unsigned per = usids_per_container(f);
  const unsigned needed = unsigned((sids.size() + per - 1) / per);
  if (needed > kMaxSids) return BuildStatus::too_many_sids;
  const uint8_t* first_block = sids[0].bytes.data();
  for (const net::Ipv6Addr& sid : sids) {
    const uint8_t* b = sid.bytes.data();
    if (std::memcmp(b, first_block, block) != 0) return BuildStatus::sid_not_in_block;
    bool usid_zero = true;
    for (unsigned i = block; i < block + usid; ++i) usid_zero &= b[i] == 0;
    // An all-zero micro-SID is the end-of-carrier marker (RFC 9800): it cannot be a hop.
    if (usid_zero) return BuildStatus::sid_not_usid;
    for (unsigned i = block + usid; i < net::kIpv6AddrLen; ++i)
      if (b[i] != 0) return BuildStatus::sid_not_usid;
  }
  for (unsigned c = 0; c < needed; ++c) {
    containers[c] = net::Ipv6Addr{};
    std::memcpy(containers[c].bytes.data(), first_block, block);
  }
  for (size_t i = 0; i < sids.size(); ++i) {
    const unsigned c = unsigned(i / per);
    const unsigned slot = unsigned(i % per);
    std::memcpy(containers[c].bytes.data() + block + slot * usid, sids[i].bytes.data() + block,
                usid);
  }
  count = needed;
  return BuildStatus::ok;
}

}  // namespace

unsigned encap_header_len(unsigned sid_count, EncapMode mode, UsidFormat usid) {
  const unsigned destinations = destination_count(sid_count, mode, usid);
  if (destinations == 0) return 0;
  return header_len_of_srh_entries(srh_entries(destinations, mode));
}

BuildStatus build_template(const TemplateSpec& spec, EncapTemplate& out) {
  if (spec.sids.empty()) return BuildStatus::no_sids;

  // Destinations in path order: the SIDs themselves or the packed uSID containers.
  net::Ipv6Addr containers[kMaxSids];
  std::span<const net::Ipv6Addr> path = spec.sids;
  if (spec.mode == EncapMode::usid) {
    unsigned count = 0;
    if (const BuildStatus s = pack_usids(spec.sids, spec.usid, containers, count);
        s != BuildStatus::ok)
      return s;
    path = std::span<const net::Ipv6Addr>(containers, count);
  } else if (spec.sids.size() > kMaxSids) {
    return BuildStatus::too_many_sids;
  }

  const unsigned n = unsigned(path.size());
  const unsigned entries = srh_entries(n, spec.mode);
  const bool has_srh = entries != 0;

  std::memset(out.bytes, 0, sizeof out.bytes);
  uint8_t* ip = out.bytes;
  // Version 6; traffic class, flow label and payload length are patched per packet.
  ip[0] = 0x60;
  ip[6] = has_srh ? net::kProtoRouting : net::kProtoIpv4;  // inner proto patched per packet
  ip[7] = spec.hop_limit;
  std::memcpy(ip + 8, spec.source.bytes.data(), net::kIpv6AddrLen);
  std::memcpy(ip + 24, path[0].bytes.data(), net::kIpv6AddrLen);

  if (has_srh) {
    uint8_t* srh = out.bytes + net::kIpv6HeaderLen;
    srh[0] = net::kProtoIpv4;       // patched per packet
    srh[1] = uint8_t(2 * entries);  // hdr ext len in 8-octet units past the first 8
    srh[2] = net::kSrhRoutingType;
    srh[3] = uint8_t(n - 1);        // segments left: the DA is path[0]
    srh[4] = uint8_t(entries - 1);  // last entry
    srh[5] = 0;                     // flags
    net::store_be16(srh + 6, spec.tag);
    // Segment List[0] is the last segment of the path (RFC 8754 reverse order).
    for (unsigned i = 0; i < entries; ++i)
      std::memcpy(srh + net::kSrhFixedLen + net::kIpv6AddrLen * i, path[n - 1 - i].bytes.data(),
                  net::kIpv6AddrLen);
  }

  out.size = uint16_t(header_len_of_srh_entries(entries));
  out.next_header_offset = has_srh ? uint16_t(net::kIpv6HeaderLen) : uint16_t(6);
  out.tag_offset = has_srh ? uint16_t(net::kIpv6HeaderLen + 6) : uint16_t(0);
  out.segment_count = spec.mode == EncapMode::usid ? uint8_t(n) : uint8_t(entries);
  out.has_srh = has_srh;
  out.first_destination = path[0];
  out.mode = spec.mode;
  return BuildStatus::ok;
}

}  // namespace srv6gw::srv6
