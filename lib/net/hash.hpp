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
inline uint32_t crc32c_u64_soft(uint32_t crc, uint64_t v) {
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

}  // namespace srv6gw::net
