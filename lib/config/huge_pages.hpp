// SPDX-License-Identifier: BSD-3-Clause
// Memory for the big per-Apply buffers (the agent's parsed request and changesets, the
// configuration indexes of config_index.hpp: tens of MB for a 100k-rule batch) backed by
// transparent huge pages. A fresh 4 KiB page costs a fault when first touched (~10 us on the 2-core
// VM we measure on: 10 MB of fresh memory took 27 ms to touch, 5-7 ms with huge pages); malloc
// returns freed big blocks to the kernel, so every large Apply paid those faults again. The system
// is configured with THP "madvise" (Debian's default), so memory must ask for huge pages:
// allocations of 2 MiB and more are mmap'ed 2 MiB-aligned and madvise(MADV_HUGEPAGE)'d; smaller
// ones go to operator new. Control plane only (never on the packet path).
#pragma once

#include <cstddef>
#include <new>

namespace srv6gw::config {

// `bytes` of zeroed-or-not memory, 64-byte aligned; throws std::bad_alloc.
void* huge_alloc(size_t bytes);
void huge_free(void* p, size_t bytes);

// Asks for huge pages on the 2 MiB-aligned part of [p, p + bytes) (memory from elsewhere, e.g.
// a std::vector of the configuration model, before it is first touched). Advice only.
void advise_huge_pages(void* p, size_t bytes);

// A std allocator over huge_alloc, for vectors that grow to megabytes.
template <class T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(huge_alloc(n * sizeof(T))); }
  void deallocate(T* p, size_t n) { huge_free(p, n * sizeof(T)); }
  friend bool operator==(const HugePageAllocator&, const HugePageAllocator&) { return true; }
};

}  // namespace srv6gw::config
