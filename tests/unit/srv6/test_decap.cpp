// SPDX-License-Identifier: BSD-3-Clause
// Decapsulation for End.DX4 / End.DX6 / End.DT46: every DecapStatus, extension-header walks,
// SRH with TLVs, and the RFC 6040 egress ECN table with IPv4 checksum checks.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "packet_builder.hpp"
#include "srv6/decap.hpp"

namespace srv6gw::srv6 {
namespace {

using test::Bytes;
using test::V6;

const V6 kSid1 = test::v6({0xfc00, 0x0001}, 0xd4);
const V6 kSid2 = test::v6({0xfc00, 0x0002}, 0x0e);

Bytes inner_v4(uint8_t tos = 0x02, size_t payload = 32) {
  test::Ipv4Fields f;
  f.tos = tos;
  return test::ipv4(f, test::udp_roce(49152, 4791, {}, payload));
}

Bytes inner_v6(uint8_t tc = 0x02, size_t payload = 32) {
  test::Ipv6Fields f;
  f.tc = tc;
  f.flow_label = 0x12345;
  return test::ipv6(f, test::udp_roce(49152, 4791, {}, payload));
}

Bytes srh(uint8_t nh, uint8_t sl = 0, uint16_t tag = 0x0BAD) {
  return test::routing_hdr(nh, 4, sl, 1, tag, {kSid1, kSid2});
}

Bytes outer(uint8_t nh, const Bytes& payload, uint8_t tc = 0) {
  test::Ipv6Fields f;
  f.next_header = nh;
  f.tc = tc;
  f.dst = kSid1;
  return test::ipv6(f, payload);
}

DecapStatus run(Bytes& pkt, LocalSidBehavior b, DecapResult& r) {
  return decap(pkt, b, r);
}

TEST(Decap, Dx4WithSrh) {
  const Bytes in = inner_v4();
  Bytes pkt = outer(43, test::concat({srh(4, 0, 0x1234), in}));
  DecapResult r;
  ASSERT_EQ(run(pkt, LocalSidBehavior::end_dx4, r), DecapStatus::ok);
  EXPECT_EQ(r.inner_offset, 40 + 8 + 32);
  EXPECT_EQ(r.inner_len, in.size());
  EXPECT_EQ(r.inner_family, net::Family::ipv4);
  EXPECT_TRUE(r.had_srh);
  EXPECT_EQ(r.srh_tag, 0x1234);
  EXPECT_EQ(r.outer_ecn, 0);
  EXPECT_FALSE(r.inner_marked_ce);
  EXPECT_TRUE(std::equal(in.begin(), in.end(), pkt.begin() + r.inner_offset));
}

TEST(Decap, ReducedWithoutSrhAndPadding) {
  const Bytes in = inner_v4();
  Bytes pkt = outer(4, in);
  pkt.resize(pkt.size() + 10, 0xEE);  // Ethernet padding after the outer payload
  DecapResult r;
  ASSERT_EQ(run(pkt, LocalSidBehavior::end_dx4, r), DecapStatus::ok);
  EXPECT_EQ(r.inner_offset, 40);
  EXPECT_EQ(r.inner_len, in.size());
  EXPECT_FALSE(r.had_srh);
  EXPECT_EQ(r.srh_tag, 0);
}

TEST(Decap, Dx6AndDt46BothFamilies) {
  const Bytes in6 = inner_v6();
  Bytes pkt6 = outer(43, test::concat({srh(41), in6}));
  DecapResult r;
  ASSERT_EQ(run(pkt6, LocalSidBehavior::end_dx6, r), DecapStatus::ok);
  EXPECT_EQ(r.inner_family, net::Family::ipv6);
  EXPECT_EQ(r.inner_len, in6.size());
  ASSERT_EQ(run(pkt6, LocalSidBehavior::end_dt46, r), DecapStatus::ok);
  EXPECT_EQ(r.inner_family, net::Family::ipv6);
  EXPECT_EQ(run(pkt6, LocalSidBehavior::end_dx4, r), DecapStatus::bad_next_header);

  Bytes pkt4 = outer(43, test::concat({srh(4), inner_v4()}));
  ASSERT_EQ(run(pkt4, LocalSidBehavior::end_dt46, r), DecapStatus::ok);
  EXPECT_EQ(r.inner_family, net::Family::ipv4);
  EXPECT_EQ(run(pkt4, LocalSidBehavior::end_dx6, r), DecapStatus::bad_next_header);
  Bytes pkt6_nosrh = outer(41, in6);
  ASSERT_EQ(run(pkt6_nosrh, LocalSidBehavior::end_dt46, r), DecapStatus::ok);
  EXPECT_EQ(r.inner_offset, 40);
}

TEST(Decap, SrhWithTlvs) {
  // 16 bytes of TLVs after the segment list: PadN (type 4) of 14 bytes of padding.
  Bytes tlvs = {4, 14};
  tlvs.resize(16, 0);
  const Bytes s = test::routing_hdr(4, 4, 0, 1, 0x0077, {kSid1, kSid2}, tlvs);
  ASSERT_EQ(s[1], 6);  // 2 SIDs (4 units) + TLVs (2 units)
  Bytes pkt = outer(43, test::concat({s, inner_v4()}));
  DecapResult r;
  ASSERT_EQ(run(pkt, LocalSidBehavior::end_dx4, r), DecapStatus::ok);
  EXPECT_EQ(r.inner_offset, 40 + 8 + 32 + 16);
  EXPECT_EQ(r.srh_tag, 0x0077);
}

TEST(Decap, ExtensionHeadersAroundSrh) {
  // hop-by-hop -> destination options -> SRH -> destination options -> atomic fragment -> IPv4
  const Bytes chain =
      test::concat({test::ext_opts(60, 1), test::ext_opts(43), srh(60, 0, 0x0101),
                    test::ext_opts(44), test::fragment_hdr(4, 0, false), inner_v4()});
  Bytes pkt = outer(0, chain);
  DecapResult r;
  ASSERT_EQ(run(pkt, LocalSidBehavior::end_dx4, r), DecapStatus::ok);
  EXPECT_EQ(r.inner_offset, 40 + 16 + 8 + 40 + 8 + 8);
  EXPECT_TRUE(r.had_srh);
  EXPECT_EQ(r.srh_tag, 0x0101);
}

TEST(Decap, OtherRoutingTypeWithSegmentsLeftZeroSkipped) {
  Bytes pkt = outer(43, test::concat({test::routing_hdr(4, 3, 0, 0, 0, {kSid2}), inner_v4()}));
  DecapResult r;
  ASSERT_EQ(run(pkt, LocalSidBehavior::end_dx4, r), DecapStatus::ok);
  EXPECT_FALSE(r.had_srh);
  EXPECT_EQ(r.inner_offset, 40 + 24);
}

struct Row {
  const char* name;
  Bytes pkt;
  LocalSidBehavior behavior;
  DecapStatus want;
  size_t contiguous = 0;  // > 0: only this many bytes are contiguous (a chain's first segment)
};

DecapStatus decap_row(Bytes& pkt, const Row& row, DecapResult& res) {
  if (row.contiguous == 0) return decap(pkt, row.behavior, res);
  return decap(std::span<uint8_t>(pkt.data(), std::min(row.contiguous, pkt.size())), pkt.size(),
               row.behavior, res);
}

std::vector<Row> rows() {
  using B = LocalSidBehavior;
  std::vector<Row> r;
  const Bytes in4 = inner_v4();
  const Bytes in6 = inner_v6();
  r.push_back({"ok", outer(43, test::concat({srh(4), in4})), B::end_dx4, DecapStatus::ok});
  r.push_back({"39_bytes", Bytes(39, 0x60), B::end_dt46, DecapStatus::truncated_outer});
  {
    Bytes p = outer(4, in4);
    p[0] = 0x45;
    r.push_back({"version_4", p, B::end_dt46, DecapStatus::not_ipv6});
  }
  {
    test::Ipv6Fields f;
    f.next_header = 4;
    f.payload_len_override = int32_t(in4.size() + 1);
    r.push_back(
        {"payload_past_span", test::ipv6(f, in4), B::end_dx4, DecapStatus::bad_outer_length});
  }
  {
    Bytes s = srh(4);
    s[1] = 6;  // claims 56 bytes; only 40 plus a 20-byte inner in a short packet
    r.push_back({"srh_past_payload", outer(43, test::concat({s, Bytes(10, 0)})), B::end_dx4,
                 DecapStatus::truncated_ext});
    r.push_back({"ext_cut", outer(60, Bytes{4, 0, 1, 2}), B::end_dx4, DecapStatus::truncated_ext});
    r.push_back(
        {"srh_cut", outer(43, Bytes{4, 4, 4, 0, 1}), B::end_dx4, DecapStatus::truncated_ext});
  }
  {
    Bytes chain;
    for (int i = 0; i < 9; ++i) test::append(chain, test::ext_opts(60));
    test::append(chain, in4);
    r.push_back({"nine_ext", outer(60, chain), B::end_dx4, DecapStatus::ext_chain_too_long});
  }
  {
    const std::vector<V6> two = {kSid1, kSid2};
    // One SID + one 8-octet unit of TLVs (Pad1 x 8): Hdr Ext Len 3 is odd and valid
    // (RFC 8754 TLVs come in 8-octet units; an HMAC TLV alone is 5 of them).
    r.push_back(
        {"srh_len_odd",
         outer(43, test::concat({test::routing_hdr(4, 4, 0, 0, 0, {kSid1}, Bytes(8, 0), 3), in4})),
         B::end_dx4, DecapStatus::ok});
    r.push_back({"last_entry_past_list",
                 outer(43, test::concat({test::routing_hdr(4, 4, 0, 2, 0, two), in4})), B::end_dx4,
                 DecapStatus::srh_inconsistent});
    r.push_back({"segments_left_past_list",
                 outer(43, test::concat({test::routing_hdr(4, 4, 3, 1, 0, two), in4})), B::end_dx4,
                 DecapStatus::srh_inconsistent});
    r.push_back({"srh_len_0", outer(43, test::concat({test::routing_hdr(4, 4, 0, 0, 0, {}), in4})),
                 B::end_dx4, DecapStatus::srh_inconsistent});
  }
  r.push_back({"segments_left_1", outer(43, test::concat({srh(4, 1), in4})), B::end_dx4,
               DecapStatus::segments_left_nonzero});
  r.push_back({"segments_left_2_of_2", outer(43, test::concat({srh(4, 2), in4})), B::end_dx4,
               DecapStatus::segments_left_nonzero});
  r.push_back({"type2_segments_left_1",
               outer(43, test::concat({test::routing_hdr(4, 2, 1, 0, 0, {kSid2}), in4})),
               B::end_dx4, DecapStatus::segments_left_nonzero});
  r.push_back({"udp_inner", outer(17, test::udp_roce(1, 4791, {}, 8)), B::end_dt46,
               DecapStatus::bad_next_header});
  r.push_back({"no_next_header", outer(59, {}), B::end_dt46, DecapStatus::bad_next_header});
  r.push_back({"dx4_gets_v6", outer(41, in6), B::end_dx4, DecapStatus::bad_next_header});
  r.push_back({"dx6_gets_v4", outer(4, in4), B::end_dx6, DecapStatus::bad_next_header});
  {
    Bytes p = outer(4, in6);  // says IPv4, carries IPv6
    r.push_back({"inner_version_mismatch", p, B::end_dt46, DecapStatus::bad_next_header});
  }
  r.push_back({"inner_v4_19", outer(4, Bytes(in4.begin(), in4.begin() + 19)), B::end_dx4,
               DecapStatus::truncated_inner});
  {
    Bytes cut(in4.begin(), in4.end() - 1);  // total length says one byte more
    r.push_back({"inner_v4_total_past", outer(4, cut), B::end_dx4, DecapStatus::truncated_inner});
    Bytes ihl = in4;
    ihl[0] = 0x44;
    r.push_back({"inner_v4_ihl_4", outer(4, ihl), B::end_dx4, DecapStatus::truncated_inner});
    Bytes tl = in4;
    tl[2] = 0;
    tl[3] = 16;  // total length below the header length
    r.push_back({"inner_v4_total_lt_ihl", outer(4, tl), B::end_dx4, DecapStatus::truncated_inner});
  }
  r.push_back({"inner_v6_39", outer(41, Bytes(in6.begin(), in6.begin() + 39)), B::end_dx6,
               DecapStatus::truncated_inner});
  r.push_back({"inner_v6_payload_past", outer(41, Bytes(in6.begin(), in6.end() - 1)), B::end_dx6,
               DecapStatus::truncated_inner});
  r.push_back({"ce_on_not_ect", outer(4, inner_v4(0x00), 0x03), B::end_dx4,
               DecapStatus::ecn_ce_on_not_ect});
  r.push_back({"fragment_first", outer(44, test::concat({test::fragment_hdr(4, 0, true), in4})),
               B::end_dx4, DecapStatus::outer_fragment});
  r.push_back({"fragment_later", outer(44, test::concat({test::fragment_hdr(4, 10, false), in4})),
               B::end_dx4, DecapStatus::outer_fragment});
  // Chains: only the first `contiguous` bytes are readable; every header must lie in them.
  const Bytes big4 = inner_v4(0x02, 8000);
  r.push_back({"split_in_outer", outer(43, test::concat({srh(4), big4})), B::end_dx4,
               DecapStatus::headers_split, 30});
  r.push_back({"split_in_srh", outer(43, test::concat({srh(4), big4})), B::end_dx4,
               DecapStatus::headers_split, 44});
  r.push_back({"split_in_inner_v4", outer(43, test::concat({srh(4), big4})), B::end_dx4,
               DecapStatus::headers_split, 40 + 40 + 10});
  r.push_back({"split_in_inner_v6", outer(41, inner_v6(0x02, 8000)), B::end_dx6,
               DecapStatus::headers_split, 40 + 39});
  r.push_back({"split_headers_whole", outer(43, test::concat({srh(4), big4})), B::end_dx4,
               DecapStatus::ok, 40 + 40 + 20});
  r.push_back({"split_first_200", outer(43, test::concat({srh(4), big4})), B::end_dx4,
               DecapStatus::ok, 200});
  return r;
}

TEST(Decap, MalformedTable) {
  for (Row& row : rows()) {
    DecapResult res;
    Bytes pkt = row.pkt;
    const DecapStatus got = decap_row(pkt, row, res);
    EXPECT_EQ(got, row.want) << row.name << ": got " << to_string(got) << " want "
                             << to_string(row.want);
    if (got != DecapStatus::ok && got != DecapStatus::ecn_ce_on_not_ect) {
      EXPECT_EQ(pkt, row.pkt) << row.name << ": a refused packet must be left as it was";
    }
    // Every prefix: refused cleanly, no read past the span.
    const size_t prefixes = row.contiguous ? 512 : row.pkt.size();  // chains: the header part
    for (size_t n = 0; n < prefixes; ++n) {
      Bytes prefix(row.pkt.begin(), row.pkt.begin() + n);
      (void)decap(prefix, row.behavior, res);
      // The same bytes as the readable part of a longer chain: no read past them either.
      Bytes head(row.pkt.begin(), row.pkt.begin() + n);
      (void)decap(std::span<uint8_t>(head), row.pkt.size(), row.behavior, res);
    }
  }
}

// The chained form reports the same as the contiguous one when everything is contiguous, and
// where the inner packet is in a split packet (lengths from the whole packet).
TEST(Decap, SplitFormAgreesWithContiguous) {
  for (const Row& row : rows()) {
    if (row.contiguous != 0) continue;
    Bytes a = row.pkt, b = row.pkt;
    DecapResult ra, rb;
    EXPECT_EQ(decap(a, row.behavior, ra), decap(std::span<uint8_t>(b), b.size(), row.behavior, rb))
        << row.name;
    EXPECT_EQ(a, b) << row.name;
  }
  Bytes pkt = outer(43, test::concat({srh(4, 0, 0x77), inner_v4(0x01, 8000)}), 0x03);
  DecapResult r;
  ASSERT_EQ(decap(std::span<uint8_t>(pkt.data(), 120), pkt.size(), LocalSidBehavior::end_dx4, r),
            DecapStatus::ok);
  EXPECT_EQ(r.inner_offset, 80);
  EXPECT_EQ(r.inner_len, 20 + 8 + 12 + 8000 + 4);
  EXPECT_TRUE(r.inner_marked_ce);  // RFC 6040 applied in the first segment
  EXPECT_EQ(r.srh_tag, 0x77);
  // The whole packet is shorter than its payload length says: refused as before.
  EXPECT_EQ(
      decap(std::span<uint8_t>(pkt.data(), 120), pkt.size() - 1, LocalSidBehavior::end_dx4, r),
      DecapStatus::bad_outer_length);
}

TEST(Decap, EveryStatusCoveredAndNamed) {
  std::set<DecapStatus> seen;
  for (const Row& row : rows()) seen.insert(row.want);
  std::set<std::string> names;
  for (unsigned s = 0; s < unsigned(DecapStatus::count_); ++s) {
    EXPECT_TRUE(seen.count(DecapStatus(s))) << "untested: " << to_string(DecapStatus(s));
    EXPECT_TRUE(names.insert(to_string(DecapStatus(s))).second);
    EXPECT_STRNE(to_string(DecapStatus(s)), "unknown");
  }
  EXPECT_STREQ(to_string(DecapStatus::segments_left_nonzero), "segments_left_nonzero");
  EXPECT_STREQ(to_string(LocalSidBehavior::end_dx4), "end_dx4");
  EXPECT_STREQ(to_string(LocalSidBehavior::end_dx6), "end_dx6");
  EXPECT_STREQ(to_string(LocalSidBehavior::end_dt46), "end_dt46");
}

// RFC 6040 section 4.2, Figure 4: [inner][outer] -> inner after decapsulation; -1 = drop.
constexpr int kEgress[4][4] = {
    //          outer: Not-ECT ECT(1) ECT(0) CE        (codepoints 0, 1, 2, 3)
    /* Not-ECT */ {0, 0, 0, -1},
    /* ECT(1)  */ {1, 1, 1, 3},
    /* ECT(0)  */ {2, 1, 2, 3},
    /* CE      */ {3, 3, 3, 3},
};

TEST(Decap, Rfc6040EgressMatrixIpv4) {
  for (uint8_t inner = 0; inner < 4; ++inner) {
    for (uint8_t outer_ecn = 0; outer_ecn < 4; ++outer_ecn) {
      const uint8_t dscp_bits = 0xB8;  // DSCP 46 must survive
      const Bytes in = inner_v4(uint8_t(dscp_bits | inner));
      Bytes pkt = outer(43, test::concat({srh(4), in}), uint8_t(0x20 | outer_ecn));
      DecapResult r;
      const DecapStatus st = decap(pkt, LocalSidBehavior::end_dx4, r);
      const int want = kEgress[inner][outer_ecn];
      SCOPED_TRACE("inner " + std::to_string(inner) + " outer " + std::to_string(outer_ecn));
      EXPECT_EQ(r.outer_ecn, outer_ecn);
      if (want < 0) {
        EXPECT_EQ(st, DecapStatus::ecn_ce_on_not_ect);
        continue;
      }
      ASSERT_EQ(st, DecapStatus::ok);
      const uint8_t* ip = pkt.data() + r.inner_offset;
      EXPECT_EQ(ip[1], dscp_bits | want);
      EXPECT_EQ(r.inner_marked_ce, want == 3 && inner != 3);
      // Header checksum: the full RFC 1071 computation over the rewritten header gives the
      // same bytes as the incremental update.
      Bytes hdr(ip, ip + 20);
      const uint16_t stored = uint16_t(hdr[10] << 8 | hdr[11]);
      hdr[10] = hdr[11] = 0;
      EXPECT_EQ(stored, test::inet_checksum(hdr));
      if (want == inner) {
        EXPECT_TRUE(std::equal(in.begin(), in.end(), ip));
      }
    }
  }
}

TEST(Decap, Rfc6040EgressMatrixIpv6) {
  for (uint8_t inner = 0; inner < 4; ++inner) {
    for (uint8_t outer_ecn = 0; outer_ecn < 4; ++outer_ecn) {
      const Bytes in = inner_v6(uint8_t(0xB8 | inner));
      Bytes pkt = outer(41, in, outer_ecn);
      DecapResult r;
      const DecapStatus st = decap(pkt, LocalSidBehavior::end_dt46, r);
      const int want = kEgress[inner][outer_ecn];
      SCOPED_TRACE("inner " + std::to_string(inner) + " outer " + std::to_string(outer_ecn));
      if (want < 0) {
        EXPECT_EQ(st, DecapStatus::ecn_ce_on_not_ect);
        continue;
      }
      ASSERT_EQ(st, DecapStatus::ok);
      const uint8_t* ip = pkt.data() + r.inner_offset;
      const uint32_t word0 = uint32_t(ip[0]) << 24 | uint32_t(ip[1]) << 16 | ip[2] << 8 | ip[3];
      EXPECT_EQ(word0 >> 28, 6u);
      EXPECT_EQ((word0 >> 20) & 0xFF, 0xB8u | uint32_t(want));
      EXPECT_EQ(word0 & 0xFFFFF, 0x12345u);  // flow label untouched
      EXPECT_EQ(r.inner_marked_ce, want == 3 && inner != 3);
    }
  }
}

TEST(Decap, Ipv4ChecksumIncrementalMatchesFullOverManyHeaders) {
  uint64_t x = 12345;
  for (int i = 0; i < 2000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    test::Ipv4Fields f;
    f.tos = uint8_t(((x >> 8) & 0xFC) | ((x >> 40) % 3 + 1));  // ECT(1), ECT(0) or CE
    f.id = uint16_t(x >> 16);
    f.ttl = uint8_t(x >> 32);
    f.src = {uint8_t(x >> 40), uint8_t(x >> 48), uint8_t(x >> 56), 1};
    f.flags_frag = uint16_t((x >> 3) & 0x4000);
    const Bytes in = test::ipv4(f, test::udp_roce(1, 4791, {}, 0));
    Bytes pkt = outer(4, in, 0x03);
    DecapResult r;
    ASSERT_EQ(decap(pkt, LocalSidBehavior::end_dx4, r), DecapStatus::ok);
    Bytes hdr(pkt.begin() + 40, pkt.begin() + 60);
    ASSERT_EQ(hdr[1] & 3, 3);
    const uint16_t stored = uint16_t(hdr[10] << 8 | hdr[11]);
    hdr[10] = hdr[11] = 0;
    ASSERT_EQ(stored, test::inet_checksum(hdr)) << i;
  }
}

// Random corruption of valid encapsulated packets: never a read outside the span, and an ok
// result always points at a whole inner packet inside the outer payload.
TEST(Decap, RandomCorruptionKeepsInvariants) {
  std::vector<Bytes> seeds;
  for (const Row& row : rows())
    if (row.want == DecapStatus::ok) seeds.push_back(row.pkt);
  seeds.push_back(outer(0, test::concat({test::ext_opts(43), srh(41), inner_v6(0x01)}), 0x03));
  seeds.push_back(outer(4, inner_v4(0x02), 0x03));
  uint64_t x = 0xD1B54A32D192ED03ull;
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  size_t ok = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    Bytes p = seeds[next() % seeds.size()];
    const int flips = int(next() % 4) + 1;
    for (int k = 0; k < flips; ++k) p[next() % p.size()] ^= uint8_t(1u << (next() % 8));
    if (next() % 4 == 0) p.resize(next() % (p.size() + 1));
    p.shrink_to_fit();
    const auto behavior = LocalSidBehavior(next() % 3);
    DecapResult r;
    const DecapStatus st = decap(p, behavior, r);
    ASSERT_LT(unsigned(st), unsigned(DecapStatus::count_));
    if (st != DecapStatus::ok) continue;
    ++ok;
    const size_t outer_end = 40 + (size_t(p[4]) << 8 | p[5]);
    ASSERT_GE(r.inner_offset, 40);
    ASSERT_LE(size_t(r.inner_offset) + r.inner_len, outer_end);
    ASSERT_LE(outer_end, p.size());
    const uint8_t version = p[r.inner_offset] >> 4;
    ASSERT_EQ(version, r.inner_family == net::Family::ipv4 ? 4 : 6);
    const net::Family wanted = behavior == LocalSidBehavior::end_dx4   ? net::Family::ipv4
                               : behavior == LocalSidBehavior::end_dx6 ? net::Family::ipv6
                                                                       : r.inner_family;
    ASSERT_EQ(r.inner_family, wanted);
  }
  EXPECT_GT(ok, 1000u);
}

// Headers whose checksum is 0x0000 or 0x0001 make the one's-complement sum of the incremental
// update carry twice (RFC 1624): the cases a single fold gets wrong.
TEST(Decap, Ipv4ChecksumEndAroundCarryCorners) {
  for (uint16_t target : {uint16_t(0x0000), uint16_t(0x0001), uint16_t(0xFFFE)}) {
    for (uint8_t inner_ecn : {uint8_t(1), uint8_t(2)}) {
      test::Ipv4Fields f;
      f.tos = inner_ecn;
      Bytes in;
      bool found = false;
      for (uint32_t id = 0; id <= 0xFFFF && !found; ++id) {
        f.id = uint16_t(id);
        in = test::ipv4(f, test::udp_roce(1, 4791, {}, 0));
        found = uint16_t(in[10] << 8 | in[11]) == target;
      }
      ASSERT_TRUE(found);
      Bytes pkt = outer(4, in, 0x03);
      DecapResult r;
      ASSERT_EQ(decap(pkt, LocalSidBehavior::end_dx4, r), DecapStatus::ok);
      Bytes hdr(pkt.begin() + 40, pkt.begin() + 60);
      const uint16_t stored = uint16_t(hdr[10] << 8 | hdr[11]);
      hdr[10] = hdr[11] = 0;
      EXPECT_EQ(stored, test::inet_checksum(hdr))
          << "checksum " << target << " inner ecn " << int(inner_ecn);
    }
  }
}

}  // namespace
}  // namespace srv6gw::srv6
