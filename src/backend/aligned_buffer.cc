#include "backend/aligned_buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace pagellm {
namespace {

// Buffers at least this large come straight from mmap: the kernel hands out zeroed
// pages lazily, so a multi-GiB KV-cache arena costs nothing until blocks are used
// (zeroing it eagerly took tens of seconds and committed all of it up front).
constexpr size_t kMmapThreshold = size_t{1} << 20;

// Linux 5.14's madvise advice; older kernel headers do not name it.
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

}  // namespace

StatusOr<AlignedBuffer> AlignedBuffer::Allocate(size_t bytes) {
  AlignedBuffer buf;
  if (bytes == 0) return buf;
  size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = nullptr;
  if (rounded >= kMmapThreshold) {
    p = mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) p = nullptr;
#ifdef MADV_HUGEPAGE
    // Fewer TLB misses when attention walks a large cache; failure is harmless.
    if (p != nullptr && rounded >= (size_t{4} << 20)) madvise(p, rounded, MADV_HUGEPAGE);
#endif
  } else {
    p = std::aligned_alloc(kAlignment, rounded);
    if (p != nullptr) std::memset(p, 0, rounded);
  }
  if (p == nullptr) {
    return ResourceExhaustedError(fmt::format("cannot allocate {} bytes of aligned memory", bytes));
  }
  buf.data_ = p;
  buf.size_ = bytes;
  return buf;
}

void AlignedBuffer::Prefault(size_t offset, size_t bytes) {
  if (offset >= size_) return;
  char* const base = static_cast<char*>(data_);
  char* first = base + offset / kAlignment * kAlignment;
  char* last = base + std::min(size_, offset + bytes);
  if (last <= first) return;
  if (madvise(first, static_cast<size_t>(last - first), MADV_POPULATE_WRITE) == 0) return;
  for (volatile char* p = first; p < last; p += kAlignment) *p = *p;
}

void AlignedBuffer::Release() {
  if (data_ == nullptr) return;
  size_t rounded = (size_ + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded >= kMmapThreshold) {
    munmap(data_, rounded);
  } else {
    std::free(data_);
  }
  data_ = nullptr;
  size_ = 0;
}

}  // namespace pagellm
