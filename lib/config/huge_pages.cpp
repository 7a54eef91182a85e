// SPDX-License-Identifier: BSD-3-Clause
#include "config/huge_pages.hpp"

#include <sys/mman.h>

#include <cstdint>

namespace srv6gw::config {

namespace {

constexpr size_t kHugePage = size_t(2) << 20;

size_t mapped_size(size_t bytes) {
  return (bytes + kHugePage - 1) & ~(kHugePage - 1);
}

}  // namespace

void* huge_alloc(size_t bytes) {
  if (bytes < kHugePage) return ::operator new(bytes == 0 ? 1 : bytes, std::align_val_t(64));
  const size_t size = mapped_size(bytes);
  // Over-map by one huge page and trim both ends: the kernel backs only 2 MiB-aligned ranges
  // with huge pages.
  void* raw =
      mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t start = uintptr_t(raw);
  const uintptr_t aligned = (start + kHugePage - 1) & ~uintptr_t(kHugePage - 1);
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = start + size + kHugePage;
  if (end > aligned + size) munmap(reinterpret_cast<void*>(aligned + size), end - aligned - size);
  // Advice only: without THP the memory still works, in 4 KiB pages.
  madvise(reinterpret_cast<void*>(aligned), size, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(aligned);
}

void advise_huge_pages(void* p, size_t bytes) {
  const uintptr_t begin = (uintptr_t(p) + kHugePage - 1) & ~uintptr_t(kHugePage - 1);
  const uintptr_t end = (uintptr_t(p) + bytes) & ~uintptr_t(kHugePage - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

void huge_free(void* p, size_t bytes) {
  if (!p) return;
  if (bytes < kHugePage) {
    ::operator delete(p, std::align_val_t(64));
    return;
  }
  munmap(p, mapped_size(bytes));
}

}  // namespace srv6gw::config
