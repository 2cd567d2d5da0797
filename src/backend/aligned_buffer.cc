#include "backend/aligned_buffer.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace pagellm {

StatusOr<AlignedBuffer> AlignedBuffer::Allocate(size_t bytes) {
  AlignedBuffer buf;
  if (bytes == 0) return buf;
  size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (p == nullptr) {
    return ResourceExhaustedError(fmt::format("cannot allocate {} bytes of aligned memory", bytes));
  }
#ifdef MADV_HUGEPAGE
  // Only worth it for buffers spanning several 2 MiB pages; failure is harmless.
  if (rounded >= (size_t{4} << 20)) madvise(p, rounded, MADV_HUGEPAGE);
#endif
  std::memset(p, 0, rounded);
  buf.data_ = p;
  buf.size_ = bytes;
  return buf;
}

void AlignedBuffer::Release() {
  std::free(data_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace pagellm
