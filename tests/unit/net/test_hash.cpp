// SPDX-License-Identifier: BSD-3-Clause
// The data plane hashes the inner address pair once (crc32c_pair) and derives the flow hash,
// the outer flow label and the recent-path key from it through CRC linearity. These tests
// hold the derived values to the definitions: separate seeded CRC32C passes, written out here
// step by step with the table-driven CRC (not the code under test), over random inputs.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "dataplane/feedback.hpp"
#include "net/hash.hpp"
#include "net/parse.hpp"
#include "policy/selection.hpp"

namespace srv6gw {
namespace {

// crc(seed, a[0..15] b[0..15]) with the software CRC, one pass.
uint32_t seeded_pass(uint32_t seed, const uint8_t* a, const uint8_t* b) {
  uint64_t w[4];
  std::memcpy(w, a, 16);
  std::memcpy(w + 2, b, 16);
  for (uint64_t v : w) seed = net::crc32c_u64_soft(seed, v);
  return seed;
}

uint32_t murmur_fmix(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

net::IpAddr random_addr(std::mt19937_64& rng) {
  net::IpAddr a;
  const bool v6 = rng() & 1;
  a.family = v6 ? net::Family::ipv6 : net::Family::ipv4;
  a.bytes = {};
  const uint64_t hi = rng(), lo = rng();
  std::memcpy(a.bytes.data(), &hi, v6 ? 8 : 4);
  if (v6) std::memcpy(a.bytes.data() + 8, &lo, 8);
  return a;
}

TEST(Hash, HardwareStepMatchesTable) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 10000; ++i) {
    const uint32_t c = uint32_t(rng());
    const uint64_t v = rng();
    ASSERT_EQ(net::crc32c_u64(c, v), net::crc32c_u64_soft(c, v));
  }
}

TEST(Hash, ReseedEqualsSeededPass) {
  std::mt19937_64 rng(2);
  uint8_t a[16], b[16];
  for (int i = 0; i < 10000; ++i) {
    for (auto& x : a) x = uint8_t(rng());
    for (auto& x : b) x = uint8_t(rng());
    const uint32_t seed = uint32_t(rng());
    const uint32_t from_zero = net::crc32c_pair(a, b);
    ASSERT_EQ(from_zero, seeded_pass(0, a, b));
    ASSERT_EQ(from_zero ^ net::crc32c_zeros_32(seed), seeded_pass(seed, a, b)) << seed;
    const uint8_t low = uint8_t(rng());
    ASSERT_EQ(from_zero ^ net::crc32c_zeros_32(seed & ~0xFFu) ^ net::crc32c_zeros_32_byte(low),
              seeded_pass((seed & ~0xFFu) ^ low, a, b));
  }
}

TEST(Hash, DerivedHashesEqualTheirDefinitions) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 10000; ++i) {
    net::PacketInfo info;
    info.src = random_addr(rng);
    info.dst = random_addr(rng);
    info.dst.family = info.src.family;
    info.family = info.src.family;
    info.udp_sport = uint16_t(rng());
    info.bth.dest_qp = uint32_t(rng()) & 0xFFFFFF;
    const uint8_t* s = info.src.bytes.data();
    const uint8_t* d = info.dst.bytes.data();

    const uint32_t flow = murmur_fmix(net::crc32c_u64_soft(
        seeded_pass(0x9E3779B9u ^ uint32_t(info.family), s, d), info.bth.dest_qp));
    ASSERT_EQ(policy::flow_hash(info.src, info.dst, info.bth.dest_qp), flow);

    uint32_t pair = seeded_pass(0x2545F491u, s, d);
    pair ^= pair >> 15;
    pair |= 1u;
    ASSERT_EQ(dataplane::pair_hash(info.src, info.dst), pair);

    const uint32_t h = net::crc32c_u64_soft(seeded_pass(0xFFFFFFFFu, s, d),
                                            uint64_t(info.udp_sport) << 32 | info.bth.dest_qp);
    uint32_t label = (h * 0x9E3779B1u) >> 12;
    if (label == 0) label = 1;
    ASSERT_EQ(net::outer_flow_label(info), label);

    const uint32_t pc = net::crc32c_pair(s, d);
    ASSERT_EQ(policy::flow_hash_from_pair_crc(pc, info.family, info.bth.dest_qp), flow);
    ASSERT_EQ(dataplane::pair_hash_from_pair_crc(pc), pair);
    ASSERT_EQ(net::outer_flow_label_from_pair_crc(pc, info.udp_sport, info.bth.dest_qp), label);
  }
}

}  // namespace
}  // namespace srv6gw
