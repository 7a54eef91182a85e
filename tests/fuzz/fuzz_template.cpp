// SPDX-License-Identifier: BSD-3-Clause
// Fuzzes encapsulation templates. The input chooses a TemplateSpec (mode, uSID format,
// 0..20 SIDs, tag, hop limit, source), the per-packet fields and a small RoCEv2 inner packet.
// The expected build status, header length and outer header bytes are computed here from
// RFC 8986 / RFC 8754 / RFC 9800 independently of lib/srv6, then:
//   - build_template's status and encap_header_len agree with that reference;
//   - write_encap writes exactly the reference header, into an exact-size buffer and in place
//     in front of the inner packet, touching no byte outside the header;
//   - the result parses as a well-formed IPv6 extension-header chain ending at the inner
//     packet, and decapsulates (after the fabric's End processing has brought segments left
//     to 0) to the identical inner packet with the Tag carried.
// Input layout (short inputs read as zeros past the end): choice (mode = low nibble % 3,
// 0x10 SIDs share a block, 0x20 raw uSID format bytes), block byte, uSID byte, SID count
// (% 21), tag (2), hop limit, source (16), block (16), the SIDs (16 bytes each, or only their
// uSID bytes when they share the block), flow label (4), per-packet tag (2), then the inner
// packet as roce_packet.hpp reads it.
#include <algorithm>
#include <cstring>
#include <span>
#include <vector>

#include "fuzz_util.hpp"
#include "net/parse.hpp"
#include "roce_packet.hpp"
#include "srv6/decap.hpp"
#include "srv6/encap.hpp"

namespace {

namespace net = srv6gw::net;
namespace srv6 = srv6gw::srv6;
using srv6::BuildStatus;
using srv6::EncapMode;
using Addr = net::Ipv6Addr;

constexpr unsigned kMaxFuzzSids = 20;  // past kMaxSids, to reach too_many_sids
constexpr size_t kMaxInnerPayload = 64;

struct Reference {
  BuildStatus status = BuildStatus::ok;
  unsigned header_len = 0;         // encap_header_len: from count and format only
  std::vector<Addr> destinations;  // SIDs or packed containers, path order
  unsigned entries = 0;            // SRH entries (0: no SRH)
};

bool format_valid(srv6::UsidFormat f) {
  return f.block_bits != 0 && f.usid_bits != 0 && f.block_bits % 8 == 0 && f.usid_bits % 8 == 0 &&
         unsigned(f.block_bits) + f.usid_bits <= 128;
}

Reference reference(const std::vector<Addr>& sids, EncapMode mode, srv6::UsidFormat f) {
  Reference ref;
  const size_t n = sids.size();
  size_t destination_count = n;
  if (mode == EncapMode::usid) {
    if (n == 0) {
      ref.status = BuildStatus::no_sids;
      return ref;
    }
    if (!format_valid(f)) {
      ref.status = BuildStatus::bad_usid_format;
      return ref;
    }
    const size_t per = (128 - f.block_bits) / f.usid_bits;
    destination_count = (n + per - 1) / per;
  }
  if (n == 0) {
    ref.status = BuildStatus::no_sids;
    return ref;
  }
  if (destination_count > srv6::kMaxSids) {
    ref.status = BuildStatus::too_many_sids;
    return ref;
  }
  // RFC 8986: H.Encaps lists every segment; H.Encaps.Red and the uSID form leave the first
  // destination out of the SRH, and need no SRH at all for a single destination.
  ref.entries =
      mode == EncapMode::encaps ? unsigned(destination_count) : unsigned(destination_count) - 1;
  ref.header_len = ref.entries == 0 ? 40 : 40 + 8 + 16 * ref.entries;
  if (mode != EncapMode::usid) {
    ref.destinations = sids;
    return ref;
  }
  // RFC 9800: every SID is block|uSID|zeros with the first SID's block and a non-zero uSID;
  // containers are block|uSID_1..uSID_k|zeros.
  const size_t block = f.block_bits / 8, usid = f.usid_bits / 8;
  const size_t per = (128 - f.block_bits) / f.usid_bits;
  for (const Addr& sid : sids) {
    if (!std::equal(sid.bytes.begin(), sid.bytes.begin() + long(block), sids[0].bytes.begin())) {
      ref.status = BuildStatus::sid_not_in_block;
      return ref;
    }
    const auto usid_begin = sid.bytes.begin() + long(block);
    if (std::all_of(usid_begin, usid_begin + long(usid), [](uint8_t b) { return b == 0; }) ||
        !std::all_of(usid_begin + long(usid), sid.bytes.end(), [](uint8_t b) { return b == 0; })) {
      ref.status = BuildStatus::sid_not_usid;
      return ref;
    }
  }
  ref.destinations.assign(destination_count, Addr{});
  for (Addr& c : ref.destinations)
    std::copy(sids[0].bytes.begin(), sids[0].bytes.begin() + long(block), c.bytes.begin());
  for (size_t i = 0; i < n; ++i)
    std::copy(sids[i].bytes.begin() + long(block), sids[i].bytes.begin() + long(block + usid),
              ref.destinations[i / per].bytes.begin() + long(block + (i % per) * usid));
  return ref;
}

// The outer header write_encap must produce, byte by byte.
std::vector<uint8_t> expected_header(const Reference& ref, const srv6::TemplateSpec& spec,
                                     const srv6::EncapFields& f) {
  std::vector<uint8_t> h(ref.header_len, 0);
  const uint32_t w0 = 6u << 28 | uint32_t(f.traffic_class) << 20 | (f.flow_label & 0xFFFFF);
  h[0] = uint8_t(w0 >> 24);
  h[1] = uint8_t(w0 >> 16);
  h[2] = uint8_t(w0 >> 8);
  h[3] = uint8_t(w0);
  srv6gw::fuzz::put_be16(&h[4], uint16_t(ref.header_len - 40 + f.inner_len));
  h[6] = ref.entries != 0 ? 43 : f.inner_proto;
  h[7] = spec.hop_limit;
  std::copy(spec.source.bytes.begin(), spec.source.bytes.end(), h.begin() + 8);
  std::copy(ref.destinations[0].bytes.begin(), ref.destinations[0].bytes.end(), h.begin() + 24);
  if (ref.entries != 0) {
    uint8_t* srh = &h[40];
    srh[0] = f.inner_proto;
    srh[1] = uint8_t(2 * ref.entries);
    srh[2] = 4;                                     // routing type: SRH
    srh[3] = uint8_t(ref.destinations.size() - 1);  // segments left
    srh[4] = uint8_t(ref.entries - 1);              // last entry
    srv6gw::fuzz::put_be16(srh + 6, f.tag);
    for (unsigned i = 0; i < ref.entries; ++i) {  // reverse order: [0] is the last segment
      const Addr& d = ref.destinations[ref.destinations.size() - 1 - i];
      std::copy(d.bytes.begin(), d.bytes.end(), srh + 8 + 16 * i);
    }
  }
  return h;
}

// What each SRv6 node on the path does before the packet reaches us (RFC 8754 4.3.1.1 End):
// segments left - 1, destination = Segment List[segments left].
void traverse_fabric(std::vector<uint8_t>& pkt, const Reference& ref) {
  if (ref.entries == 0) return;
  uint8_t* srh = pkt.data() + 40;
  while (srh[3] > 0) {
    --srh[3];
    FUZZ_CHECK(srh[3] <= srh[4]);  // never indexes past the list
    std::memcpy(pkt.data() + 24, srh + 8 + 16 * srh[3], 16);
  }
  FUZZ_CHECK(std::memcmp(pkt.data() + 24, ref.destinations.back().bytes.data(), 16) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  srv6gw::fuzz::ByteReader in(data, size);
  const uint8_t choice = in.u8();
  const EncapMode mode = EncapMode((choice & 0x0F) % 3);
  const bool structured = (choice & 0x10) != 0;  // SIDs sharing a block, as uSIDs are
  const bool raw_format = (choice & 0x20) != 0;  // any byte values, mostly invalid
  const uint8_t fb = in.u8(), fu = in.u8();
  srv6::UsidFormat format;
  format.block_bits = raw_format ? fb : uint8_t(8 * (1 + fb % 12));
  format.usid_bits = raw_format ? fu : uint8_t(8 * (1 + fu % 4));
  const unsigned sid_count = in.u8() % (kMaxFuzzSids + 1);

  srv6::TemplateSpec spec;
  spec.mode = mode;
  spec.usid = format;
  spec.tag = in.u16();
  spec.hop_limit = in.u8();
  spec.source.bytes = in.bytes<16>();
  const auto block = in.bytes<16>();
  const size_t block_len = std::min<size_t>(format.block_bits / 8, 16);
  const size_t usid_len = std::min<size_t>(format.usid_bits / 8, 16 - block_len);
  std::vector<Addr> sids(sid_count);
  for (Addr& sid : sids) {
    if (structured) {
      std::copy(block.begin(), block.begin() + long(block_len), sid.bytes.begin());
      for (size_t i = 0; i < usid_len; ++i) sid.bytes[block_len + i] = in.u8();
    } else {
      sid.bytes = in.bytes<16>();
    }
  }
  spec.sids = sids;

  srv6::EncapFields fields;
  fields.flow_label = in.u32() & 0xFFFFF;
  fields.tag = in.u16();
  const srv6gw::fuzz::RocePacket inner = srv6gw::fuzz::make_roce_packet(in, kMaxInnerPayload);
  fields.inner_len = uint16_t(inner.bytes.size());
  fields.inner_proto = inner.family == net::Family::ipv4 ? 4 : 41;
  fields.traffic_class = inner.traffic_class;

  const Reference ref = reference(sids, mode, format);
  const unsigned header_len = srv6::encap_header_len(sid_count, mode, format);
  const bool buildable = ref.header_len != 0;  // count and format fit (SIDs aside)
  FUZZ_CHECK(header_len == ref.header_len);

  srv6::EncapTemplate t;
  const BuildStatus st = srv6::build_template(spec, t);
  FUZZ_CHECK(st == ref.status);
  FUZZ_CHECK(std::strcmp(srv6::to_string(st), "unknown") != 0);
  if (st != BuildStatus::ok) {
    FUZZ_CHECK(buildable ==
               (st == BuildStatus::sid_not_in_block || st == BuildStatus::sid_not_usid));
    return 0;
  }

  // The template itself.
  FUZZ_CHECK(t.size == header_len && t.size <= srv6::kMaxEncapLen);
  FUZZ_CHECK(t.has_srh == (ref.entries != 0));
  FUZZ_CHECK(t.segment_count ==
             (mode == EncapMode::usid ? ref.destinations.size() : size_t(ref.entries)));
  FUZZ_CHECK(t.first_destination == ref.destinations[0]);
  FUZZ_CHECK(t.mode == mode);

  // write_encap into an exact-size buffer (ASan catches any byte past the header) ...
  const std::vector<uint8_t> expected = expected_header(ref, spec, fields);
  std::vector<uint8_t> exact(t.size);
  srv6::write_encap(t, exact.data(), fields);
  FUZZ_CHECK(exact == expected);

  // ... and in place in front of the inner packet, as the data plane prepends it: guard
  // bytes before the header and the inner packet after it must come out untouched.
  constexpr uint8_t kGuard = 0xA5;
  std::vector<uint8_t> frame(srv6::kMaxEncapLen + inner.bytes.size(), kGuard);
  std::copy(inner.bytes.begin(), inner.bytes.end(), frame.begin() + srv6::kMaxEncapLen);
  const size_t start = srv6::kMaxEncapLen - t.size;
  srv6::write_encap(t, frame.data() + start, fields);
  FUZZ_CHECK(std::all_of(frame.begin(), frame.begin() + long(start),
                         [](uint8_t b) { return b == kGuard; }));
  std::vector<uint8_t> packet(frame.begin() + long(start), frame.end());
  FUZZ_CHECK(std::equal(expected.begin(), expected.end(), packet.begin()));
  FUZZ_CHECK(std::equal(inner.bytes.begin(), inner.bytes.end(), packet.begin() + t.size));

  // The outer chain is well formed: the parser walks it to the inner protocol (it reports
  // no L4 offset for a non-UDP protocol; decap below checks where the inner packet starts).
  net::PacketInfo outer;
  FUZZ_CHECK(net::parse_ip(packet, net::Family::ipv6, outer) == net::ParseStatus::not_udp);
  FUZZ_CHECK(outer.l4_proto == fields.inner_proto);
  FUZZ_CHECK(outer.l3_len == packet.size());
  FUZZ_CHECK(outer.dscp == inner.traffic_class >> 2 && outer.ecn == (inner.traffic_class & 3));
  FUZZ_CHECK(outer.ttl == spec.hop_limit);

  // Decapsulation: refused while segments remain, then the identical inner packet.
  srv6::DecapResult r;
  std::vector<uint8_t> arrived = packet;
  const bool last_hop = ref.destinations.size() == 1;
  const srv6::DecapStatus early = srv6::decap(arrived, srv6::LocalSidBehavior::end_dt46, r);
  FUZZ_CHECK(early ==
             (last_hop ? srv6::DecapStatus::ok : srv6::DecapStatus::segments_left_nonzero));
  arrived = packet;
  traverse_fabric(arrived, ref);
  const srv6::LocalSidBehavior dx = inner.family == net::Family::ipv4
                                        ? srv6::LocalSidBehavior::end_dx4
                                        : srv6::LocalSidBehavior::end_dx6;
  const srv6::LocalSidBehavior wrong = inner.family == net::Family::ipv4
                                           ? srv6::LocalSidBehavior::end_dx6
                                           : srv6::LocalSidBehavior::end_dx4;
  FUZZ_CHECK(srv6::decap(arrived, wrong, r) == srv6::DecapStatus::bad_next_header);
  for (const srv6::LocalSidBehavior b : {dx, srv6::LocalSidBehavior::end_dt46}) {
    std::vector<uint8_t> copy = arrived;
    FUZZ_CHECK(srv6::decap(copy, b, r) == srv6::DecapStatus::ok);
    FUZZ_CHECK(r.inner_offset == t.size && r.inner_len == inner.bytes.size());
    FUZZ_CHECK(r.inner_family == inner.family);
    FUZZ_CHECK(r.had_srh == t.has_srh);
    if (t.has_srh) FUZZ_CHECK(r.srh_tag == fields.tag);
    FUZZ_CHECK(!r.inner_marked_ce);  // outer ECN copied from the inner: nothing to change
    FUZZ_CHECK(std::equal(inner.bytes.begin(), inner.bytes.end(), copy.begin() + t.size));
  }
  return 0;
}
