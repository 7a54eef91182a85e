// SPDX-License-Identifier: BSD-3-Clause
// SRv6 encapsulation templates: byte-exact headers for every mode (RFC 8986 5.1/5.2, RFC 8754
// SRH layout, RFC 9800 NEXT-C-SID containers), every BuildStatus, and the per-packet patch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <vector>

#include "net/parse.hpp"
#include "packet_builder.hpp"
#include "srv6/decap.hpp"
#include "srv6/encap.hpp"

namespace srv6gw::srv6 {
namespace {

using net::Ipv6Addr;
using test::Bytes;

Ipv6Addr addr(const char* text) {
  return *net::parse_ipv6(text);
}

const Ipv6Addr kSource = addr("fd00::1");

std::vector<Ipv6Addr> full_sids(unsigned n) {
  std::vector<Ipv6Addr> v;
  for (unsigned i = 0; i < n; ++i) {
    Ipv6Addr a = addr("fc00::");
    a.bytes[3] = uint8_t(i + 1);  // fc00:N::e
    a.bytes[15] = 0x0e;
    v.push_back(a);
  }
  return v;
}

// The header H.Encaps(.Red) must produce for `dests` (path order), per-packet fields zero
// and inner protocol 4: written field by field from RFC 8200 / RFC 8754.
Bytes expected_header(const std::vector<Ipv6Addr>& dests, bool full_srh, uint16_t tag,
                      uint8_t hop_limit) {
  const size_t n = dests.size();
  const size_t entries = full_srh ? n : n - 1;
  Bytes b;
  test::put32(b, 0x60000000);
  test::put16(b, 0);
  test::put8(b, entries ? 43 : 4);
  test::put8(b, hop_limit);
  test::append(b, kSource.bytes);
  test::append(b, dests[0].bytes);
  if (entries) {
    test::put8(b, 4);
    test::put8(b, uint8_t(entries * 2));
    test::put8(b, 4);
    test::put8(b, uint8_t(n - 1));
    test::put8(b, uint8_t(entries - 1));
    test::put8(b, 0);
    test::put16(b, tag);
    for (size_t i = 0; i < entries; ++i) test::append(b, dests[n - 1 - i].bytes);
  }
  return b;
}

Bytes template_bytes(const EncapTemplate& t) {
  return Bytes(t.bytes, t.bytes + t.size);
}

BuildStatus build(const std::vector<Ipv6Addr>& sids, EncapMode mode, EncapTemplate& t,
                  UsidFormat f = {}, uint16_t tag = 0x0007, uint8_t hop = 64) {
  TemplateSpec spec;
  spec.source = kSource;
  spec.sids = sids;
  spec.mode = mode;
  spec.usid = f;
  spec.tag = tag;
  spec.hop_limit = hop;
  return build_template(spec, t);
}

TEST(Encap, LiteralEncapsTwoSids) {
  EncapTemplate t;
  ASSERT_EQ(build({addr("fc00:a::1"), addr("fc00:b::2")}, EncapMode::encaps, t), BuildStatus::ok);
  const Bytes want = {
      0x60, 0, 0, 0,    0, 0, 43, 64,  // ver, tc/fl, payload len, next header SRH, hop limit
      0xfd, 0, 0, 0,    0, 0, 0,  0,  0, 0, 0, 0, 0, 0, 0, 1,  // src fd00::1
      0xfc, 0, 0, 0x0a, 0, 0, 0,  0,  0, 0, 0, 0, 0, 0, 0, 1,  // dst fc00:a::1
      4,    4, 4, 1,    1, 0, 0,  7,  // nh (patched), len 4, type 4, SL 1, LE 1, flags, tag 7
      0xfc, 0, 0, 0x0b, 0, 0, 0,  0,  0, 0, 0, 0, 0, 0, 0, 2,  // Segment List[0] = last
      0xfc, 0, 0, 0x0a, 0, 0, 0,  0,  0, 0, 0, 0, 0, 0, 0, 1,  // Segment List[1] = first
  };
  EXPECT_EQ(template_bytes(t), want);
  EXPECT_EQ(t.size, 80);
  EXPECT_TRUE(t.has_srh);
  EXPECT_EQ(t.next_header_offset, 40);
  EXPECT_EQ(t.tag_offset, 46);
  EXPECT_EQ(t.segment_count, 2);
  EXPECT_EQ(t.first_destination, addr("fc00:a::1"));
}

TEST(Encap, LiteralReducedTwoAndOneSid) {
  EncapTemplate t;
  ASSERT_EQ(build({addr("fc00:a::1"), addr("fc00:b::2")}, EncapMode::encaps_red, t),
            BuildStatus::ok);
  Bytes want = {0x60, 0, 0, 0, 0, 0, 43, 64, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
                0xfc, 0, 0, 0x0a, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 4, 2, 4, 1, 0, 0, 0,
                7,  // SL 1 (DA is the first
                    // SID), LE 0
                0xfc, 0, 0, 0x0b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
  EXPECT_EQ(template_bytes(t), want);
  EXPECT_EQ(t.segment_count, 1);

  ASSERT_EQ(build({addr("fc00:a::1")}, EncapMode::encaps_red, t), BuildStatus::ok);
  want = {0x60, 0, 0, 0,    0, 0, 4, 64,  // no SRH: next header is the inner protocol
          0xfd, 0, 0, 0,    0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 1,
          0xfc, 0, 0, 0x0a, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 1};
  EXPECT_EQ(template_bytes(t), want);
  EXPECT_FALSE(t.has_srh);
  EXPECT_EQ(t.next_header_offset, 6);
  EXPECT_EQ(t.tag_offset, 0);
  EXPECT_EQ(t.segment_count, 0);
}

TEST(Encap, ByteExactAllModesAndLengths) {
  for (unsigned n : {1u, 2u, 3u, 16u}) {
    const auto sids = full_sids(n);
    for (EncapMode mode : {EncapMode::encaps, EncapMode::encaps_red}) {
      EncapTemplate t;
      ASSERT_EQ(build(sids, mode, t, {}, uint16_t(0xBEEF), uint8_t(n)), BuildStatus::ok);
      const bool full = mode == EncapMode::encaps;
      EXPECT_EQ(template_bytes(t), expected_header(sids, full, 0xBEEF, uint8_t(n)))
          << to_string(mode) << " n=" << n;
      const unsigned entries = full ? n : n - 1;
      EXPECT_EQ(t.size, entries ? 48 + 16 * entries : 40);
      EXPECT_EQ(t.size, encap_header_len(n, mode));
      EXPECT_EQ(t.has_srh, entries != 0);
      EXPECT_EQ(t.segment_count, entries);
      EXPECT_EQ(t.first_destination, sids[0]);
      EXPECT_EQ(t.mode, mode);
    }
  }
  EXPECT_EQ(encap_header_len(16, EncapMode::encaps), kMaxEncapLen);
}

// Micro-SID list in path order for a block (`block_bytes` of `block`) and `usid_bytes`-wide
// micro-SIDs numbered 1..n (distinct, non-zero).
std::vector<Ipv6Addr> usid_sids(const Ipv6Addr& block, unsigned block_bytes, unsigned usid_bytes,
                                unsigned n) {
  std::vector<Ipv6Addr> v;
  for (unsigned i = 0; i < n; ++i) {
    Ipv6Addr a{};
    std::memcpy(a.bytes.data(), block.bytes.data(), block_bytes);
    const uint32_t id = 0x100 * (i + 1) + i + 1;  // 0x0101, 0x0202, ...
    for (unsigned k = 0; k < usid_bytes; ++k)
      a.bytes[block_bytes + k] = uint8_t(id >> (8 * ((usid_bytes - 1 - k) % 4)));
    v.push_back(a);
  }
  return v;
}

// Containers per RFC 9800: block then micro-SIDs in order, zero tail.
std::vector<Ipv6Addr> pack_reference(const std::vector<Ipv6Addr>& sids, unsigned block_bytes,
                                     unsigned usid_bytes) {
  const unsigned per = (16 - block_bytes) / usid_bytes;
  std::vector<Ipv6Addr> out;
  for (size_t i = 0; i < sids.size(); ++i) {
    if (i % per == 0) {
      Ipv6Addr c{};
      std::memcpy(c.bytes.data(), sids[0].bytes.data(), block_bytes);
      out.push_back(c);
    }
    std::memcpy(out.back().bytes.data() + block_bytes + (i % per) * usid_bytes,
                sids[i].bytes.data() + block_bytes, usid_bytes);
  }
  return out;
}

TEST(Encap, UsidLiteralSixFitInDestination) {
  const std::vector<Ipv6Addr> sids = {addr("fc00:0:1::"), addr("fc00:0:2::"), addr("fc00:0:3::"),
                                      addr("fc00:0:4::"), addr("fc00:0:5::"), addr("fc00:0:6::")};
  EncapTemplate t;
  ASSERT_EQ(build(sids, EncapMode::usid, t), BuildStatus::ok);
  EXPECT_EQ(t.size, 40);
  EXPECT_FALSE(t.has_srh);
  EXPECT_EQ(t.segment_count, 1);
  EXPECT_EQ(t.first_destination, addr("fc00:0:1:2:3:4:5:6"));
  EXPECT_EQ(t.bytes[6], 4);
  EXPECT_EQ(0, std::memcmp(t.bytes + 24, addr("fc00:0:1:2:3:4:5:6").bytes.data(), 16));
}

TEST(Encap, UsidLiteralSevenNeedTwoContainers) {
  std::vector<Ipv6Addr> sids;
  for (const char* s : {"fc00:0:1::", "fc00:0:2::", "fc00:0:3::", "fc00:0:4::", "fc00:0:5::",
                        "fc00:0:6::", "fc00:0:7::"})
    sids.push_back(addr(s));
  EncapTemplate t;
  ASSERT_EQ(build(sids, EncapMode::usid, t, {32, 16}, 0x0102), BuildStatus::ok);
  const Bytes want = {
      0x60, 0, 0, 0,    0, 0, 43,   64,   0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0,    0, 1, 0xfc, 0, 0, 0,    0,    1,    0, 2, 0, 3, 0, 4, 0, 5, 0, 6,  // container 1 = DA
      4,    2, 4, 1,    0, 0, 0x01, 0x02,                                      // SL 1, LE 0
      0xfc, 0, 0, 0,    0, 7, 0,    0,    0,    0, 0, 0, 0, 0, 0, 0};          // container 2
  EXPECT_EQ(template_bytes(t), want);
  EXPECT_EQ(t.segment_count, 2);
  EXPECT_TRUE(t.has_srh);
}

TEST(Encap, UsidFormatsByteExact) {
  struct Format {
    UsidFormat f;
    const char* block;
  };
  const Format formats[] = {{{32, 16}, "fc00:0::"},
                            {{48, 16}, "fc00:0:a::"},
                            {{32, 32}, "fc00:1::"},
                            {{16, 16}, "fc00::"},
                            {{64, 8}, "fc00:1:2:3::"}};
  for (const Format& fm : formats) {
    const unsigned bb = fm.f.block_bits / 8, ub = fm.f.usid_bits / 8;
    const unsigned per = (16 - bb) / ub;
    for (unsigned n : {1u, 2u, 3u, 6u, 7u, 16u, per, per + 1, 3 * per}) {
      const auto sids = usid_sids(addr(fm.block), bb, ub, n);
      const auto containers = pack_reference(sids, bb, ub);
      EncapTemplate t;
      ASSERT_EQ(build(sids, EncapMode::usid, t, fm.f, 0xA5A5), BuildStatus::ok)
          << int(fm.f.block_bits) << "/" << int(fm.f.usid_bits) << " n=" << n;
      EXPECT_EQ(template_bytes(t), expected_header(containers, false, 0xA5A5, 64))
          << int(fm.f.block_bits) << "/" << int(fm.f.usid_bits) << " n=" << n;
      EXPECT_EQ(t.segment_count, containers.size());
      EXPECT_EQ(t.first_destination, containers[0]);
      EXPECT_EQ(t.size, encap_header_len(n, EncapMode::usid, fm.f));
    }
  }
}

TEST(Encap, UsidContainerCounts) {
  // 32/16: six per container; 48/16: five; 32/32: three.
  const struct {
    UsidFormat f;
    unsigned n, containers;
  } cases[] = {{{32, 16}, 6, 1},  {{32, 16}, 7, 2}, {{32, 16}, 12, 2},
               {{32, 16}, 13, 3}, {{48, 16}, 5, 1}, {{48, 16}, 6, 2},
               {{32, 32}, 3, 1},  {{32, 32}, 4, 2}, {{32, 32}, 16, 6}};
  for (const auto& c : cases) {
    const unsigned len = encap_header_len(c.n, EncapMode::usid, c.f);
    EXPECT_EQ(len, c.containers == 1 ? 40u : 48u + 16 * (c.containers - 1)) << c.n;
  }
}

TEST(Encap, BuildStatusEveryValue) {
  EncapTemplate t;
  EXPECT_EQ(build({}, EncapMode::encaps, t), BuildStatus::no_sids);
  EXPECT_EQ(build({}, EncapMode::usid, t), BuildStatus::no_sids);
  EXPECT_EQ(build(full_sids(17), EncapMode::encaps, t), BuildStatus::too_many_sids);
  EXPECT_EQ(build(full_sids(17), EncapMode::encaps_red, t), BuildStatus::too_many_sids);
  EXPECT_EQ(encap_header_len(17, EncapMode::encaps), 0u);
  EXPECT_EQ(encap_header_len(0, EncapMode::encaps_red), 0u);
  // usid: the bound is on containers. 120/8 holds one micro-SID per container.
  const auto one_per = usid_sids(addr("fc00:1:2:3:4:5:6:7"), 15, 1, 17);
  EXPECT_EQ(build(std::vector(one_per.begin(), one_per.begin() + 16), EncapMode::usid, t, {120, 8}),
            BuildStatus::ok);
  EXPECT_EQ(t.segment_count, 16);
  EXPECT_EQ(build(one_per, EncapMode::usid, t, {120, 8}), BuildStatus::too_many_sids);
  EXPECT_EQ(encap_header_len(17, EncapMode::usid, {120, 8}), 0u);
  EXPECT_EQ(encap_header_len(17, EncapMode::usid, {32, 16}), 48u + 16 * 2);

  const auto sids = usid_sids(addr("fc00::"), 4, 2, 3);
  for (UsidFormat bad :
       {UsidFormat{0, 16}, UsidFormat{32, 0}, UsidFormat{12, 16}, UsidFormat{32, 12},
        UsidFormat{120, 16}, UsidFormat{128, 8}, UsidFormat{255, 8}}) {
    EXPECT_EQ(build(sids, EncapMode::usid, t, bad), BuildStatus::bad_usid_format)
        << int(bad.block_bits) << "/" << int(bad.usid_bits);
    EXPECT_EQ(encap_header_len(3, EncapMode::usid, bad), 0u);
  }
  // Formats do not matter outside usid mode.
  EXPECT_EQ(build(full_sids(2), EncapMode::encaps, t, {0, 0}), BuildStatus::ok);

  auto other_block = sids;
  other_block[2].bytes[1] ^= 1;
  EXPECT_EQ(build(other_block, EncapMode::usid, t), BuildStatus::sid_not_in_block);
  auto trailing = sids;
  trailing[1].bytes[15] = 1;
  EXPECT_EQ(build(trailing, EncapMode::usid, t), BuildStatus::sid_not_usid);
  auto zero_usid = sids;
  zero_usid[0].bytes[4] = zero_usid[0].bytes[5] = 0;  // fc00:0:: : end-of-carrier, not a hop
  EXPECT_EQ(build(zero_usid, EncapMode::usid, t), BuildStatus::sid_not_usid);
  // A full SID (fc00:1::e) is not a uSID in a 32/16 format.
  EXPECT_EQ(build(full_sids(1), EncapMode::usid, t), BuildStatus::sid_not_usid);
}

TEST(Encap, Names) {
  EXPECT_STREQ(to_string(EncapMode::encaps), "encaps");
  EXPECT_STREQ(to_string(EncapMode::encaps_red), "encaps_red");
  EXPECT_STREQ(to_string(EncapMode::usid), "usid");
  EXPECT_STREQ(to_string(BuildStatus::ok), "ok");
  EXPECT_STREQ(to_string(BuildStatus::no_sids), "no_sids");
  EXPECT_STREQ(to_string(BuildStatus::too_many_sids), "too_many_sids");
  EXPECT_STREQ(to_string(BuildStatus::bad_usid_format), "bad_usid_format");
  EXPECT_STREQ(to_string(BuildStatus::sid_not_in_block), "sid_not_in_block");
  EXPECT_STREQ(to_string(BuildStatus::sid_not_usid), "sid_not_usid");
}

TEST(WriteEncap, PatchesPerPacketFieldsOnly) {
  // Every SID count: each fixed-size copy of copy_template and the loop beyond them.
  for (unsigned n = 1; n <= kMaxSids; ++n) {
    for (EncapMode mode : {EncapMode::encaps, EncapMode::encaps_red}) {
      const auto sids = full_sids(n);
      EncapTemplate t;
      ASSERT_EQ(build(sids, mode, t, {}, 0x1111, 9), BuildStatus::ok);
      // Guard bytes before and after the written header must survive.
      Bytes buf(8 + t.size + 64, 0xCC);
      EncapFields f;
      f.inner_len = 1234;
      f.inner_proto = 41;
      f.traffic_class = 0xB9;
      f.flow_label = 0xFABCDE;  // bits above 20 must be ignored
      f.tag = 0x8003;
      write_encap(t, buf.data() + 8, f);
      for (size_t i = 0; i < 8; ++i) ASSERT_EQ(buf[i], 0xCC);
      for (size_t i = 8 + t.size; i < buf.size(); ++i) ASSERT_EQ(buf[i], 0xCC) << i;
      Bytes got(buf.begin() + 8, buf.begin() + 8 + t.size);
      Bytes want = template_bytes(t);
      want[0] = 0x6B;  // version 6, TC high nibble 0xB
      want[1] = 0x9A;  // TC low nibble 9, flow label bits 19..16 = 0xA
      want[2] = 0xBC;
      want[3] = 0xDE;
      const uint16_t plen = uint16_t(t.size - 40 + 1234);
      want[4] = uint8_t(plen >> 8);
      want[5] = uint8_t(plen);
      want[t.has_srh ? 40 : 6] = 41;
      if (t.has_srh) {
        want[46] = 0x80;
        want[47] = 0x03;
      }
      EXPECT_EQ(got, want) << to_string(mode) << " n=" << n;
    }
  }
}

// Round trip through the decapsulation of the last segment: the inner packet is unchanged.
TEST(WriteEncap, RoundTripThroughDecap) {
  const Bytes inner = test::ipv4({}, test::udp_roce(49152, 4791, {}, 64));
  for (EncapMode mode : {EncapMode::encaps, EncapMode::encaps_red}) {
    for (unsigned n : {1u, 4u, 16u}) {
      EncapTemplate t;
      ASSERT_EQ(build(full_sids(n), mode, t, {}, 0x0042), BuildStatus::ok);
      Bytes pkt(t.size + inner.size());
      std::memcpy(pkt.data() + t.size, inner.data(), inner.size());
      EncapFields f;
      f.inner_len = uint16_t(inner.size());
      f.inner_proto = 4;
      f.tag = 0x0042;
      write_encap(t, pkt.data(), f);
      if (t.has_srh) pkt[43] = 0;  // the fabric's End processing ran segments left to 0
      DecapResult r;
      ASSERT_EQ(decap(pkt, LocalSidBehavior::end_dx4, r), DecapStatus::ok)
          << to_string(mode) << " n=" << n;
      EXPECT_EQ(r.inner_offset, t.size);
      EXPECT_EQ(r.inner_len, inner.size());
      EXPECT_EQ(r.had_srh, t.has_srh);
      EXPECT_EQ(r.srh_tag, t.has_srh ? 0x0042 : 0);
      EXPECT_TRUE(std::equal(inner.begin(), inner.end(), pkt.begin() + t.size));
    }
  }
}

// engine/path-id-in-source: without an SRH every 16-bit Tag value (each path id 0..32767,
// plain and reflected) goes into the low 16 bits of the outer source and reads back the same
// after decapsulation; nothing else changes (the flow label keeps its 20 bits of entropy).
// With an SRH the Tag carries it and the source stays the template's.
TEST(WriteEncap, PathIdInSourceRoundTripsEveryValue) {
  const Bytes inner = test::ipv4({}, test::udp_roce(49152, 4791, {}, 64));
  const Ipv6Addr source = addr("fd00:0:0:7::");  // ends in 16 zero bits (the /112 is ours)
  const Ipv6Addr usid_path = addr("fc00:0:100:200:300::");  // the destination either way
  const std::vector<Ipv6Addr> micro_sids = {addr("fc00:0:100::"), addr("fc00:0:200::"),
                                            addr("fc00:0:300::")};
  for (EncapMode mode : {EncapMode::usid, EncapMode::encaps_red}) {
    TemplateSpec spec;
    spec.source = source;
    if (mode == EncapMode::usid)
      spec.sids = micro_sids;
    else
      spec.sids = std::span<const Ipv6Addr>(&usid_path, 1);
    spec.mode = mode;
    spec.usid = {32, 16};
    EncapTemplate t;
    ASSERT_EQ(build_template(spec, t), BuildStatus::ok);
    ASSERT_FALSE(t.has_srh);
    Bytes pkt(t.size + inner.size());
    std::memcpy(pkt.data() + t.size, inner.data(), inner.size());
    for (uint32_t v = 0; v <= 0xFFFF; ++v) {
      EncapFields f;
      f.inner_len = uint16_t(inner.size());
      f.inner_proto = 4;
      f.flow_label = 0xABCDE;
      f.tag = uint16_t(v);
      f.tag_in_source = true;
      write_encap(t, pkt.data(), f);
      DecapResult r;
      ASSERT_EQ(decap(pkt, LocalSidBehavior::end_dx4, r), DecapStatus::ok) << v;
      ASSERT_FALSE(r.had_srh);
      ASSERT_EQ(read_source_path_id(pkt.data()), v);
      // The locator part of the source, the destination and the flow label are untouched.
      ASSERT_TRUE(std::equal(source.bytes.begin(), source.bytes.end() - 2, pkt.begin() + 8));
      ASSERT_TRUE(std::equal(usid_path.bytes.begin(), usid_path.bytes.end(), pkt.begin() + 24));
      ASSERT_EQ(net::load_be32(pkt.data()) & 0xFFFFF, 0xABCDEu);
    }
  }
  // With an SRH the flag changes nothing: the Tag carries the id, the source stays ours.
  EncapTemplate t;
  ASSERT_EQ(build(full_sids(2), EncapMode::encaps, t, {}, 0), BuildStatus::ok);
  Bytes pkt(t.size, 0);
  EncapFields f;
  f.tag = 0x8005;
  f.tag_in_source = true;
  write_encap(t, pkt.data(), f);
  EXPECT_EQ(read_source_path_id(pkt.data()), read_source_path_id(t.bytes));
  EXPECT_EQ(net::load_be16(pkt.data() + t.tag_offset), 0x8005);
  // Without the flag the source is the template's.
  ASSERT_EQ(build(full_sids(1), EncapMode::encaps_red, t, {}, 0), BuildStatus::ok);
  f.tag_in_source = false;
  write_encap(t, pkt.data(), f);
  EXPECT_TRUE(std::equal(kSource.bytes.begin(), kSource.bytes.end(), pkt.begin() + 8));
}

TEST(WriteEncap, SourceRoomForPathId) {
  EXPECT_TRUE(source_has_path_id_room(addr("fd00::")));
  EXPECT_TRUE(source_has_path_id_room(addr("fd00:1:2:3:4:5:6:0")));
  EXPECT_FALSE(source_has_path_id_room(addr("fd00::1")));
  EXPECT_FALSE(source_has_path_id_room(addr("fd00::100")));
}

// engine/source-entropy-bits (fabric receive spreading): N low flow-label bits land in source
// bits 16..16+N-1, beside the path id in bits 0..15 (both on together, uSID without an SRH):
// each reads back unchanged, the locator above stays ours, decapsulation accepts every
// variant, and 64 distinct flow labels give as many distinct sources as the N bits allow.
TEST(WriteEncap, SourceEntropyBesidePathId) {
  const Bytes inner = test::ipv4({}, test::udp_roce(49152, 4791, {}, 64));
  const Ipv6Addr source = addr("fd00:0:0:7::");  // /96: room for 16 path-id + 16 entropy bits
  const std::vector<Ipv6Addr> micro_sids = {addr("fc00:0:100::"), addr("fc00:0:200::")};
  TemplateSpec spec;
  spec.source = source;
  spec.sids = micro_sids;
  spec.mode = EncapMode::usid;
  spec.usid = {32, 16};
  EncapTemplate t;
  ASSERT_EQ(build_template(spec, t), BuildStatus::ok);
  ASSERT_FALSE(t.has_srh);
  EXPECT_EQ(source_entropy_mask(0), 0u);
  EXPECT_EQ(source_entropy_mask(1), 0x00010000u);
  EXPECT_EQ(source_entropy_mask(16), 0xFFFF0000u);
  for (unsigned bits : {1u, 6u, 8u, 16u}) {
    ASSERT_TRUE(source_has_entropy_room(source, bits)) << bits;
    const uint32_t mask = source_entropy_mask(bits);
    std::set<uint32_t> sources;  // the source's last 32 bits (the bits above are checked equal)
    for (uint32_t flow = 0; flow < 64; ++flow) {
      const uint32_t label = (flow * 0x9E3779B1u) >> 12;  // 20 bits, as the flow hash gives
      Bytes pkt(t.size + inner.size());
      std::memcpy(pkt.data() + t.size, inner.data(), inner.size());
      EncapFields f;
      f.inner_len = uint16_t(inner.size());
      f.flow_label = label;
      f.tag = uint16_t(0x8000 | flow);
      f.tag_in_source = true;
      write_encap(t, pkt.data(), f);
      write_source_entropy(pkt.data(), mask, f.flow_label);
      DecapResult r;
      ASSERT_EQ(decap(pkt, LocalSidBehavior::end_dx4, r), DecapStatus::ok);
      ASSERT_EQ(read_source_path_id(pkt.data()), f.tag);  // the path id is untouched
      ASSERT_EQ(net::load_be32(pkt.data() + 20) >> 16, label & ((1u << bits) - 1));
      ASSERT_TRUE(std::equal(source.bytes.begin(), source.bytes.begin() + 12, pkt.begin() + 8));
      ASSERT_EQ(net::load_be32(pkt.data()) & 0xFFFFF, label);  // the flow label is kept
      sources.insert(net::load_be32(pkt.data() + 20) >> 16);   // without the path id
    }
    // As many as the bits allow (6 bits: 62 of 64, two labels share their low 6 bits).
    EXPECT_GE(sources.size(), std::min<size_t>(62, size_t(1) << bits)) << bits;
  }
  // Room: the low 16 + N bits must be zero.
  EXPECT_TRUE(source_has_entropy_room(addr("fd00::8000:0"), 15));
  EXPECT_FALSE(source_has_entropy_room(addr("fd00::8000:0"), 16));
  EXPECT_FALSE(source_has_entropy_room(addr("fd00::1"), 1));
  EXPECT_FALSE(source_has_entropy_room(addr("fd00::8:0"), 4));
  EXPECT_TRUE(source_has_entropy_room(addr("fd00::10:0"), 4));
}

}  // namespace
}  // namespace srv6gw::srv6
