// AlignedBuffer: an owned, zero-initialised, page-aligned block of host memory.
//
// Backends hand these out for workspaces, packed weights and the KV-cache arena.
// Large buffers ask the kernel for transparent huge pages (fewer TLB misses when the
// attention kernel walks a multi-GiB cache).
//
//   PAGELLM_ASSIGN_OR_RETURN(AlignedBuffer buf, AlignedBuffer::Allocate(1 << 20));
//   float* p = buf.as<float>();
#pragma once

#include <cstddef>
#include <utility>

#include "common/status.h"

namespace pagellm {

class AlignedBuffer {
 public:
  static constexpr size_t kAlignment = 4096;

  AlignedBuffer() = default;
  ~AlignedBuffer() { Release(); }
  AlignedBuffer(AlignedBuffer&& other) noexcept { *this = std::move(other); }
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept {
    if (this != &other) {
      Release();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  // Fails with ResourceExhausted when the allocation fails. `bytes` may be 0.
  static StatusOr<AlignedBuffer> Allocate(size_t bytes);

  // Faults in the pages of [offset, offset + bytes) now (clamped to the buffer) without
  // changing their contents, so the first step that writes there does not pay for them:
  // on a VM a first touch costs 0.4-13 GB/s, with transparent huge pages 2 MiB at a time.
  // Call before other threads write to the range (the fallback for kernels older than
  // 5.14, which lack MADV_POPULATE_WRITE, rewrites one byte per page).
  void Prefault(size_t offset, size_t bytes);

  void* data() const { return data_; }
  size_t size() const { return size_; }
  template <typename T>
  T* as() const { return static_cast<T*>(data_); }

 private:
  void Release();
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace pagellm
