// SPDX-License-Identifier: BSD-3-Clause
// Unaligned network-order loads and stores on raw bytes. memcpy of a constant size compiles
// to a single move, so these are as cheap as a pointer cast without its undefined behaviour.
#pragma once

#include <cstdint>
#include <cstring>

namespace srv6gw::net {

inline uint16_t load_be16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return __builtin_bswap16(v);
}

inline uint32_t load_be32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return __builtin_bswap32(v);
}

inline void store_be16(uint8_t* p, uint16_t v) {
  v = __builtin_bswap16(v);
  std::memcpy(p, &v, sizeof v);
}

inline void store_be32(uint8_t* p, uint32_t v) {
  v = __builtin_bswap32(v);
  std::memcpy(p, &v, sizeof v);
}

// 24-bit big-endian field (BTH DestQP, PSN).
inline uint32_t load_be24(const uint8_t* p) {
  return uint32_t(p[0]) << 16 | uint32_t(p[1]) << 8 | p[2];
}

}  // namespace srv6gw::net
