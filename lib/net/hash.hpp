// SPDX-License-Identifier: BSD-3-Clause
// CRC32C (Castagnoli) step over a 64-bit word: the SSE4.2 instruction where the build
// targets it, an identical table-driven version otherwise, so hash values (flow labels,
// flow-based path selection) do not depend on the CPU the gateway was built for.
#pragma once

#include <array>
#include <cstdint>

#if defined(__SSE4_2__)
#include <nmmintrin.h>
#endif

namespace srv6gw::net {

namespace detail {
inline constexpr std::array<uint32_t, 256> make_crc32c_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}
inline constexpr std::array<uint32_t, 256> kCrc32cTable = make_crc32c_table();
}  // namespace detail

// Software CRC32C step: same result as the SSE4.2 crc32q instruction (no pre/post inversion).
constexpr uint32_t crc32c_u64_soft(uint32_t crc, uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    crc = detail::kCrc32cTable[(crc ^ uint32_t(v)) & 0xFF] ^ (crc >> 8);
    v >>= 8;
  }
  return crc;
}

inline uint32_t crc32c_u64(uint32_t crc, uint64_t v) {
#if defined(__SSE4_2__)
  return uint32_t(_mm_crc32_u64(crc, v));
#else
  return crc32c_u64_soft(crc, v);
#endif
}

// ---- One CRC pass shared by several hashes of the same 32 bytes ----
// Without pre/post inversion CRC32C is linear over GF(2) in (initial value, data):
//   crc(init, D) = crc(0, D) ^ crc(init, zeros of |D| bytes).
// The data plane hashes the inner address pair (32 bytes) three times per packet with three
// different initial values (flow selection, outer flow label, recent-path table). It runs
// the CRC over the addresses once from 0 (crc32c_pair) and turns that into each seeded value
// with a constant (crc32c_zeros_32 of the seed): the same values as three separate passes,
// with a third of the CRC instructions and a shorter dependency chain.

// crc(init, 32 zero bytes). Meant for constants (constexpr); see crc32c_zeros_32_byte.
constexpr uint32_t crc32c_zeros_32(uint32_t init) {
  for (int i = 0; i < 4; ++i) init = crc32c_u64_soft(init, 0);
  return init;
}

namespace detail {
inline constexpr std::array<uint32_t, 256> make_zeros32_by_byte() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) t[i] = crc32c_zeros_32(i);
  return t;
}
inline constexpr std::array<uint32_t, 256> kZeros32ByByte = make_zeros32_by_byte();
}  // namespace detail

// crc32c_zeros_32 of a runtime byte (one load). crc32c_zeros_32 is linear as well, so a seed
// `constant ^ byte` gives crc32c_zeros_32(constant) ^ crc32c_zeros_32_byte(byte).
inline uint32_t crc32c_zeros_32_byte(uint8_t b) {
  return detail::kZeros32ByByte[b];
}

// crc(0, a[0..15] a[16..31]) of two 16-byte blocks (an address pair).
inline uint32_t crc32c_pair(const uint8_t* a16, const uint8_t* b16) {
  uint64_t w[4];
  __builtin_memcpy(w, a16, 16);
  __builtin_memcpy(w + 2, b16, 16);
  uint32_t c = crc32c_u64(0, w[0]);
  c = crc32c_u64(c, w[1]);
  c = crc32c_u64(c, w[2]);
  return crc32c_u64(c, w[3]);
}

}  // namespace srv6gw::net
