// SPDX-License-Identifier: BSD-3-Clause
// Probe wire format (srv6/probe.hpp, docs/design/probing.md) on byte buffers: request layout byte
// by byte, a round trip through emulated transit End nodes (segments left decremented, the
// destination rewritten, as RFC 8986 End does), reflection at the remote, the reply's way
// back, and every refusal of parse().
#include "srv6/probe.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "net/bytes.hpp"

namespace srv6gw::srv6::probe {
namespace {

using Bytes = std::vector<uint8_t>;

net::Ipv6Addr a6(const char* s) {
  return *net::parse_ipv6(s);
}

const net::Ipv6Addr kSrc = a6("fc00:a::1");
const net::Ipv6Addr kT1 = a6("fc00:1::e");
const net::Ipv6Addr kT2 = a6("fc00:2::e");
const net::Ipv6Addr kRemoteProbe = a6("fc00:b::f");
const net::Ipv6Addr kLocalProbe = a6("fc00:a::f");

Bytes request(uint32_t seq = 7, uint16_t path_id = 42) {
  const net::Ipv6Addr segs[] = {kT1, kT2, kRemoteProbe};
  const net::Ipv6Addr rets[] = {kT2, kT1, kLocalProbe};
  RequestSpec spec;
  spec.source = kSrc;
  spec.segments = segs;
  spec.return_segments = rets;
  spec.hop_limit = 61;
  spec.traffic_class = 0xb8;
  Fields f;
  f.path_id = path_id;
  f.seq = seq;
  f.tx_time = 0x0102030405060708ull;
  Bytes out(kMaxRequestLen + 10);
  size_t len = 0;
  EXPECT_EQ(build_request(spec, f, out, len), Status::ok);
  out.resize(len);
  return out;
}

net::Ipv6Addr at(const Bytes& b, size_t off) {
  net::Ipv6Addr a;
  std::memcpy(a.bytes.data(), b.data() + off, 16);
  return a;
}

// RFC 8986 End at a transit node: segments left - 1, destination = the new active segment.
void transit_end(Bytes& p) {
  uint8_t* srh = p.data() + 40;
  ASSERT_GT(srh[3], 0);
  --srh[3];
  std::memcpy(p.data() + 24, srh + 8 + 16 * srh[3], 16);
  --p[7];
}

TEST(Probe, RequestLayout) {
  const Bytes p = request();
  ASSERT_EQ(p.size(), request_len(3, 3));
  EXPECT_EQ(p[0] >> 4, 6);
  EXPECT_EQ(uint8_t(net::load_be32(p.data()) >> 20), 0xb8);  // traffic class
  EXPECT_EQ(net::load_be16(p.data() + 4), p.size() - 40);
  EXPECT_EQ(p[6], 43);
  EXPECT_EQ(p[7], 61);
  EXPECT_EQ(at(p, 8), kSrc);
  EXPECT_EQ(at(p, 24), kT1);  // first segment
  const uint8_t* srh = p.data() + 40;
  EXPECT_EQ(srh[0], 17);  // UDP
  EXPECT_EQ(srh[1], 6);   // 3 SIDs
  EXPECT_EQ(srh[2], 4);
  EXPECT_EQ(srh[3], 2);                    // segments left
  EXPECT_EQ(srh[4], 2);                    // last entry
  EXPECT_EQ(net::load_be16(srh + 6), 42);  // tag = path id
  EXPECT_EQ(at(p, 48), kRemoteProbe);      // segment list is reversed
  EXPECT_EQ(at(p, 64), kT2);
  EXPECT_EQ(at(p, 80), kT1);
  const size_t udp = 40 + 56;
  EXPECT_EQ(net::load_be16(p.data() + udp + 2), kUdpPort);
  EXPECT_EQ(net::load_be16(p.data() + udp + 4), p.size() - udp);
  const uint8_t* h = p.data() + udp + 8;
  EXPECT_EQ(net::load_be32(h), kMagic);
  EXPECT_EQ(h[4], kVersion);
  EXPECT_EQ(h[5], uint8_t(Type::request));
  EXPECT_EQ(h[6], 3);
  EXPECT_EQ(net::load_be16(h + 8), 42);
  EXPECT_EQ(net::load_be32(h + 12), 7u);
  EXPECT_EQ(h[16], 0x01);
  EXPECT_EQ(h[23], 0x08);
  EXPECT_EQ(at(p, udp + 8 + kHeaderLen), kT2);  // return list, path order
  EXPECT_EQ(at(p, udp + 8 + kHeaderLen + 32), kLocalProbe);
  // The checksum covers the final destination (RFC 8200 8.1), as a receiver computes it.
  const uint16_t sum =
      udp6_checksum(kSrc, kRemoteProbe, std::span<const uint8_t>(p.data() + udp, p.size() - udp));
  EXPECT_EQ(sum, 0xFFFF) << "checksum does not verify";
}

TEST(Probe, RoundTripThroughTransitAndReflection) {
  Bytes p = request(1234, 7);
  Parsed parsed;
  EXPECT_EQ(parse(p, parsed), Status::segments_left_nonzero);  // still at T1
  transit_end(p);
  transit_end(p);
  EXPECT_EQ(at(p, 24), kRemoteProbe);
  ASSERT_EQ(parse(p, parsed), Status::ok);
  EXPECT_EQ(parsed.fields.type, Type::request);
  EXPECT_EQ(parsed.fields.seq, 1234u);
  EXPECT_EQ(parsed.fields.path_id, 7);
  EXPECT_EQ(parsed.n_return, 3);
  EXPECT_EQ(parsed.destination, kRemoteProbe);

  const size_t before = p.size();
  size_t len = 0;
  ASSERT_EQ(reflect(p, parsed, 64, 99, len), Status::ok);
  EXPECT_EQ(len, reply_len(3));
  EXPECT_LE(len, before);
  p.resize(len);
  EXPECT_EQ(at(p, 8), kRemoteProbe);  // reply source = the probe SID it arrived at
  EXPECT_EQ(at(p, 24), kT2);          // first return segment
  EXPECT_EQ(p[7], 64);
  EXPECT_EQ(p[40 + 3], 2);
  EXPECT_EQ(parse(p, parsed), Status::segments_left_nonzero);
  transit_end(p);
  transit_end(p);
  EXPECT_EQ(at(p, 24), kLocalProbe);
  Parsed reply;
  ASSERT_EQ(parse(p, reply), Status::ok);
  EXPECT_EQ(reply.fields.type, Type::reply);
  EXPECT_EQ(reply.fields.seq, 1234u);
  EXPECT_EQ(reply.fields.path_id, 7);
  EXPECT_EQ(reply.fields.tx_time, 0x0102030405060708ull);
  EXPECT_EQ(reply.fields.reflect_time, 99u);
  EXPECT_EQ(reply.tag, 7);
  EXPECT_EQ(reply.n_return, 0);
  // A reply is not reflected again.
  size_t l2 = 0;
  EXPECT_EQ(reflect(p, reply, 64, 1, l2), Status::bad_type);
}

TEST(Probe, SingleSegmentPath) {
  const net::Ipv6Addr segs[] = {kRemoteProbe};
  const net::Ipv6Addr rets[] = {kLocalProbe};
  RequestSpec spec;
  spec.source = kSrc;
  spec.segments = segs;
  spec.return_segments = rets;
  Bytes p(kMaxRequestLen);
  size_t len = 0;
  ASSERT_EQ(build_request(spec, Fields{}, p, len), Status::ok);
  p.resize(len);
  Parsed parsed;
  ASSERT_EQ(parse(p, parsed), Status::ok);
  ASSERT_EQ(reflect(p, parsed, 64, 0, len), Status::ok);
  p.resize(len);
  ASSERT_EQ(parse(p, parsed), Status::ok);
  EXPECT_EQ(parsed.fields.type, Type::reply);
}

TEST(Probe, BuildRefusals) {
  RequestSpec spec;
  spec.source = kSrc;
  Bytes out(kMaxRequestLen);
  size_t len = 0;
  EXPECT_EQ(build_request(spec, Fields{}, out, len), Status::bad_segment_count);
  std::vector<net::Ipv6Addr> many(17, kT1);
  const net::Ipv6Addr one[] = {kLocalProbe};
  spec.segments = many;
  spec.return_segments = one;
  EXPECT_EQ(build_request(spec, Fields{}, out, len), Status::bad_segment_count);
  spec.segments = std::span<const net::Ipv6Addr>(many.data(), 16);
  spec.return_segments = std::span<const net::Ipv6Addr>(many.data(), 16);
  size_t max_len = 0;
  ASSERT_EQ(build_request(spec, Fields{}, out, max_len), Status::ok);
  EXPECT_EQ(max_len, kMaxRequestLen);
  Bytes small(100);
  EXPECT_EQ(build_request(spec, Fields{}, small, len), Status::buffer_too_small);
}

// Every refusal: the packet is reported, never read past its end.
TEST(Probe, ParseRefusals) {
  Bytes good = request();
  transit_end(good);
  transit_end(good);
  Parsed parsed;
  ASSERT_EQ(parse(good, parsed), Status::ok);
  struct Case {
    const char* name;
    void (*mutate)(Bytes&);
    Status want;
  };
  const size_t udp = 40 + 56;
  static const size_t kUdp = udp;
  const Case cases[] = {
      {"short", [](Bytes& b) { b.resize(39); }, Status::truncated},
      {"v4", [](Bytes& b) { b[0] = 0x45; }, Status::not_ipv6},
      {"payload_len", [](Bytes& b) { net::store_be16(b.data() + 4, 2000); }, Status::bad_length},
      {"no_srh", [](Bytes& b) { b[6] = 17; }, Status::no_srh},
      {"rt_type", [](Bytes& b) { b[42] = 0; }, Status::no_srh},
      {"last_entry", [](Bytes& b) { b[44] = 7; }, Status::srh_inconsistent},
      {"sl_gt_le", [](Bytes& b) { b[43] = 3; }, Status::srh_inconsistent},
      {"not_udp", [](Bytes& b) { b[40] = 59; }, Status::not_probe},
      {"port", [](Bytes& b) { net::store_be16(b.data() + kUdp + 2, 4791); }, Status::not_probe},
      {"udp_len", [](Bytes& b) { net::store_be16(b.data() + kUdp + 4, 12); },
       Status::bad_udp_length},
      {"checksum", [](Bytes& b) { b[kUdp + 8 + 13] ^= 1; }, Status::bad_checksum},
      {"zero_checksum", [](Bytes& b) { net::store_be16(b.data() + kUdp + 6, 0); },
       Status::bad_checksum},
  };
  for (const Case& c : cases) {
    Bytes b = good;
    c.mutate(b);
    EXPECT_EQ(parse(b, parsed), c.want) << c.name;
  }
  // Header fields, with the checksum fixed up so that they are what is refused.
  auto with = [&](size_t off, uint8_t v) {
    Bytes b = good;
    b[off] = v;
    net::store_be16(b.data() + udp + 6, 0);
    const uint16_t c =
        udp6_checksum(kSrc, kRemoteProbe, std::span<const uint8_t>(b.data() + udp, b.size() - udp));
    net::store_be16(b.data() + udp + 6, c);
    return b;
  };
  EXPECT_EQ(parse(with(udp + 8, 0), parsed), Status::bad_magic);
  EXPECT_EQ(parse(with(udp + 8 + 4, 9), parsed), Status::bad_version);
  EXPECT_EQ(parse(with(udp + 8 + 5, 3), parsed), Status::bad_type);
  EXPECT_EQ(parse(with(udp + 8 + 6, 0), parsed), Status::bad_return_list);
  EXPECT_EQ(parse(with(udp + 8 + 6, 4), parsed), Status::bad_return_list);
  EXPECT_EQ(parse(with(udp + 8 + 6, 17), parsed), Status::bad_return_list);
  // Every truncation of a sound probe is refused (with the length fields left as they were).
  for (size_t n = 0; n < good.size(); ++n) {
    Bytes b(good.begin(), good.begin() + long(n));
    EXPECT_NE(parse(b, parsed), Status::ok) << n;
  }
  // Trailing bytes (Ethernet padding) are fine.
  Bytes padded = good;
  padded.resize(good.size() + 6, 0);
  EXPECT_EQ(parse(padded, parsed), Status::ok);
}

TEST(Probe, StatusNames) {
  for (unsigned s = 0; s < unsigned(Status::count_); ++s)
    EXPECT_STRNE(to_string(Status(s)), "?") << s;
}

}  // namespace
}  // namespace srv6gw::srv6::probe
