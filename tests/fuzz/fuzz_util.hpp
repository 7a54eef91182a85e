// SPDX-License-Identifier: BSD-3-Clause
// Helpers shared by the fuzz targets: an invariant check that aborts (libFuzzer and the replay
// runner both report an abort as a crash with the message printed first), a reader that turns
// fuzzer bytes into typed choices without ever failing, and a few independent reference
// computations (RFC 1071 checksum) so that invariants do not rest on the code under test.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>

// The libFuzzer entry point every target defines; replay.cpp calls it too.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace srv6gw::fuzz {

[[noreturn]] inline void invariant_failed(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "fuzz invariant violated: %s (%s:%d)\n", expr, file, line);
  std::fflush(stderr);
  std::abort();
}

// Not assert(): it must stay active in release builds (b_ndebug=if-release).
#define FUZZ_CHECK(cond)                                                      \
  do {                                                                        \
    if (!(cond)) ::srv6gw::fuzz::invariant_failed(#cond, __FILE__, __LINE__); \
  } while (0)

// Consumes fuzzer bytes front to back; past the end every read yields zeros, so any input,
// even an empty one, maps to some well-defined choice.
class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  uint8_t u8() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint16_t u16() {
    const uint16_t hi = u8();
    return uint16_t(hi << 8 | u8());
  }
  uint32_t u32() {
    const uint32_t hi = u16();
    return hi << 16 | u16();
  }
  template <size_t N>
  std::array<uint8_t, N> bytes() {
    // memcpy of what is left rather than a per-byte loop: GCC 12's vectoriser reports a
    // false -Wstringop-overflow on the loop.
    std::array<uint8_t, N> out{};
    const size_t n = remaining() < N ? remaining() : N;
    if (n != 0) std::memcpy(out.data(), data_ + pos_, n);
    pos_ += n;
    return out;
  }
  // The unread rest, at most `max` bytes.
  std::span<const uint8_t> rest(size_t max) {
    const size_t n = remaining() < max ? remaining() : max;
    std::span<const uint8_t> out(data_ + pos_, n);
    pos_ += n;
    return out;
  }
  size_t remaining() const { return size_ - pos_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// RFC 1071 Internet checksum (the reference, written out in full).
inline uint16_t inet_checksum(std::span<const uint8_t> b) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < b.size(); i += 2) sum += uint32_t(b[i]) << 8 | b[i + 1];
  if (b.size() & 1) sum += uint32_t(b.back()) << 8;
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return uint16_t(~sum);
}

inline uint16_t be16(const uint8_t* p) {
  return uint16_t(p[0] << 8 | p[1]);
}
inline void put_be16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v >> 8);
  p[1] = uint8_t(v);
}

}  // namespace srv6gw::fuzz
