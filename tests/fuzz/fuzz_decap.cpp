// SPDX-License-Identifier: BSD-3-Clause
// Fuzzes srv6::decap on arbitrary bytes (a span starting at the outer IPv6 header) for every
// local SID behavior, each on its own heap copy sized exactly to the input so that ASan sees
// any access past the end. On success the inner packet must lie inside the outer payload,
// be of the family the behavior allows, re-parse as a sound IP header of the reported length,
// and the only bytes changed must be the inner ECN bits (plus the IPv4 checksum), changed
// exactly as the RFC 6040 egress table says. On failure nothing may be changed.
#include <algorithm>
#include <cstring>
#include <span>
#include <vector>

#include "fuzz_util.hpp"
#include "net/parse.hpp"
#include "srv6/decap.hpp"

namespace {

namespace net = srv6gw::net;
namespace srv6 = srv6gw::srv6;
using srv6::DecapResult;
using srv6::DecapStatus;
using srv6::LocalSidBehavior;

constexpr uint8_t kNotEct = 0, kEct1 = 1, kEct0 = 2, kCe = 3;

uint8_t inner_ecn(const uint8_t* inner, net::Family family) {
  return family == net::Family::ipv4 ? inner[1] & 0x3 : (inner[1] >> 4) & 0x3;
}

// RFC 6040 section 4.2, written from the table (not from the code under test).
uint8_t rfc6040_egress(uint8_t inner, uint8_t outer) {
  if (outer == kCe) return kCe;
  if (outer == kEct1 && inner == kEct0) return kEct1;
  return inner;
}

// Header-level statuses: decap validated these fields, so parse_ip may not report them.
bool header_broken(net::ParseStatus s) {
  using net::ParseStatus;
  return s == ParseStatus::truncated_ipv4 || s == ParseStatus::bad_ipv4_version ||
         s == ParseStatus::bad_ipv4_ihl || s == ParseStatus::bad_ipv4_length ||
         s == ParseStatus::truncated_ipv6 || s == ParseStatus::bad_ipv6_version ||
         s == ParseStatus::bad_ipv6_length;
}

// What an accepted outer header chain must look like (RFC 8200 section 4, RFC 8754 section 2),
// walked here independently of decap: extension headers that fit in the payload, at most
// net::kMaxExtHeaders of them, no routing header with segments left, any SRH with a segment
// list that fits its length (TLVs, in any number of 8-octet units, may follow it), and the chain
// ending at the inner packet with next header 4/41.
void check_chain(std::span<const uint8_t> input, const DecapResult& r) {
  const size_t outer_end = 40 + size_t(srv6gw::fuzz::be16(input.data() + 4));
  uint8_t nh = input[6];
  size_t off = 40;
  unsigned count = 0;
  bool srh_seen = false;
  uint16_t tag = 0;
  while (nh == 0 || nh == 43 || nh == 44 || nh == 60) {
    FUZZ_CHECK(++count <= net::kMaxExtHeaders);
    FUZZ_CHECK(off + 8 <= outer_end);
    const uint8_t* ext = input.data() + off;
    const size_t len = nh == 44 ? 8 : (size_t(ext[1]) + 1) * 8;
    FUZZ_CHECK(off + len <= outer_end);
    if (nh == 44) FUZZ_CHECK((srv6gw::fuzz::be16(ext + 2) & 0xFFF9) == 0);  // atomic only
    if (nh == 43) {
      FUZZ_CHECK(ext[3] == 0);  // segments left
      if (ext[2] == 4) {
        FUZZ_CHECK(2 * (size_t(ext[4]) + 1) <= ext[1]);  // TLVs may follow the list
        srh_seen = true;
        tag = srv6gw::fuzz::be16(ext + 6);
      }
    }
    nh = ext[0];
    off += len;
  }
  FUZZ_CHECK(off == r.inner_offset);
  FUZZ_CHECK(nh == (r.inner_family == net::Family::ipv4 ? 4 : 41));
  FUZZ_CHECK(r.had_srh == srh_seen);
  if (srh_seen) FUZZ_CHECK(r.srh_tag == tag);
}

struct Outcome {
  DecapStatus status;
  DecapResult result;
  std::vector<uint8_t> bytes;
};

Outcome run(std::span<const uint8_t> input, LocalSidBehavior behavior) {
  Outcome o{DecapStatus::count_, {}, std::vector<uint8_t>(input.begin(), input.end())};
  o.status = srv6::decap(o.bytes, behavior, o.result);
  // The fast path for the usual layout decides exactly as the walk: same status, same
  // result, same bytes.
  std::vector<uint8_t> general_bytes(input.begin(), input.end());
  DecapResult general;
  FUZZ_CHECK(srv6::decap_general(general_bytes, behavior, general) == o.status);
  FUZZ_CHECK(general == o.result);
  FUZZ_CHECK(general_bytes == o.bytes);
  return o;
}

void check(std::span<const uint8_t> input, LocalSidBehavior behavior, const Outcome& o) {
  const DecapStatus st = o.status;
  const DecapResult& r = o.result;
  FUZZ_CHECK(unsigned(st) < unsigned(DecapStatus::count_));
  FUZZ_CHECK(std::strcmp(srv6::to_string(st), "unknown") != 0);
  if (st == DecapStatus::truncated_outer) FUZZ_CHECK(input.size() < 40);
  if (input.size() >= 40 && (input[0] >> 4) != 6) FUZZ_CHECK(st == DecapStatus::not_ipv6);

  if (st != DecapStatus::ok) {
    // Refused (or well formed but undeliverable): the packet is left exactly as it came.
    FUZZ_CHECK(std::equal(input.begin(), input.end(), o.bytes.begin(), o.bytes.end()));
    if (st != DecapStatus::ecn_ce_on_not_ect) return;
  }

  // The inner packet lies in the outer payload, which lies in the span.
  const size_t outer_end = 40 + size_t(srv6gw::fuzz::be16(input.data() + 4));
  FUZZ_CHECK(outer_end <= input.size());
  FUZZ_CHECK(r.inner_offset >= 40);
  FUZZ_CHECK(size_t(r.inner_offset) + r.inner_len <= outer_end);
  FUZZ_CHECK(r.outer_ecn == ((input[1] >> 4) & 0x3));
  if (behavior == LocalSidBehavior::end_dx4) FUZZ_CHECK(r.inner_family == net::Family::ipv4);
  if (behavior == LocalSidBehavior::end_dx6) FUZZ_CHECK(r.inner_family == net::Family::ipv6);
  FUZZ_CHECK(r.inner_family == net::Family::ipv4 || r.inner_family == net::Family::ipv6);
  check_chain(input, r);

  const uint8_t* before = input.data() + r.inner_offset;
  const uint8_t* after = o.bytes.data() + r.inner_offset;
  const uint8_t ecn_before = inner_ecn(before, r.inner_family);
  if (st == DecapStatus::ecn_ce_on_not_ect) {
    FUZZ_CHECK(r.outer_ecn == kCe && ecn_before == kNotEct);
    return;
  }
  FUZZ_CHECK(!(r.outer_ecn == kCe && ecn_before == kNotEct));

  // Inner header sound: parse_ip finds it of the reported length.
  const std::span<const uint8_t> inner(o.bytes.data() + r.inner_offset, r.inner_len);
  net::PacketInfo info;
  const net::ParseStatus ps = net::parse_ip(inner, r.inner_family, info);
  FUZZ_CHECK(!header_broken(ps));
  FUZZ_CHECK(info.l3_len == r.inner_len);

  // ECN per RFC 6040, nothing else changed but the IPv4 checksum.
  const uint8_t ecn_after = inner_ecn(after, r.inner_family);
  FUZZ_CHECK(ecn_after == rfc6040_egress(ecn_before, r.outer_ecn));
  FUZZ_CHECK(r.inner_marked_ce == (ecn_after == kCe && ecn_before != kCe));
  for (size_t i = 0; i < input.size(); ++i) {
    const size_t rel = i - r.inner_offset;  // wraps for i < inner_offset: never matches below
    const bool ecn_byte = rel == 1;
    const bool csum_byte = r.inner_family == net::Family::ipv4 && (rel == 10 || rel == 11);
    if (!ecn_byte && !csum_byte) FUZZ_CHECK(o.bytes[i] == input[i]);
  }
  if (r.inner_family == net::Family::ipv4) {
    FUZZ_CHECK((before[1] & 0xFC) == (after[1] & 0xFC));
    // A header whose checksum was right stays right after the incremental update.
    const size_t ihl = size_t(before[0] & 0xF) * 4;
    if (srv6gw::fuzz::inet_checksum({before, ihl}) == 0)
      FUZZ_CHECK(srv6gw::fuzz::inet_checksum({after, ihl}) == 0);
  } else {
    FUZZ_CHECK((before[1] & 0xCF) == (after[1] & 0xCF));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> input(data, size);
  const Outcome dx4 = run(input, LocalSidBehavior::end_dx4);
  const Outcome dx6 = run(input, LocalSidBehavior::end_dx6);
  const Outcome dt46 = run(input, LocalSidBehavior::end_dt46);
  check(input, LocalSidBehavior::end_dx4, dx4);
  check(input, LocalSidBehavior::end_dx6, dx6);
  check(input, LocalSidBehavior::end_dt46, dt46);

  // End.DT46 accepts exactly what End.DX4 or End.DX6 accepts, with the same result.
  const bool dt46_ok = dt46.status == DecapStatus::ok;
  FUZZ_CHECK(dt46_ok == (dx4.status == DecapStatus::ok || dx6.status == DecapStatus::ok));
  FUZZ_CHECK(!(dx4.status == DecapStatus::ok && dx6.status == DecapStatus::ok));
  if (dt46_ok) {
    const Outcome& same = dx4.status == DecapStatus::ok ? dx4 : dx6;
    FUZZ_CHECK(same.result.inner_offset == dt46.result.inner_offset);
    FUZZ_CHECK(same.result.inner_len == dt46.result.inner_len);
    FUZZ_CHECK(same.result.srh_tag == dt46.result.srh_tag);
    FUZZ_CHECK(same.result.had_srh == dt46.result.had_srh);
    FUZZ_CHECK(same.bytes == dt46.bytes);
  }
  return 0;
}
