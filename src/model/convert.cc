#include "model/convert.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "tensor/element_access.h"

namespace pagellm {

void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  int64_t num_chunks = (n + grain - 1) / grain;
  // hardware_concurrency() reads /sys/devices/system/cpu/online (three syscalls) on every
  // call, and callers run single-chunk ParallelFors per row (ConvertTensor of one row in
  // the GGUF converter: ~300k rows of a 151,936-row vocab, seconds of system time), so it
  // is asked once per process and not at all for a single chunk.
  static const int64_t kHardwareThreads = std::max(1u, std::thread::hardware_concurrency());
  int64_t num_threads = num_chunks <= 1 ? 1 : std::min<int64_t>(kHardwareThreads, num_chunks);
  if (num_threads <= 1) {
    fn(0, n);
    return;
  }
  int64_t chunks_per_thread = (num_chunks + num_threads - 1) / num_threads;
  std::vector<std::thread> threads;
  for (int64_t t = 0; t < num_threads; ++t) {
    int64_t begin = t * chunks_per_thread * grain;
    int64_t end = std::min(n, (t + 1) * chunks_per_thread * grain);
    if (begin >= end) break;
    threads.emplace_back([&fn, begin, end] { fn(begin, end); });
  }
  for (std::thread& t : threads) t.join();
}

void ConvertTensor(const TensorView& src, const TensorView& dst) {
  PAGELLM_CHECK(src.numel() == dst.numel());
  if (src.dtype == dst.dtype) {
    std::memcpy(dst.data, src.data, src.nbytes());
    return;
  }
  ParallelFor(src.numel(), 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) StoreElementFromF32(dst.data, dst.dtype, i, LoadElementAsF32(src.data, src.dtype, i));
  });
}

float ReadElementAsFloat(const TensorView& view, int64_t i) { return LoadElementAsF32(view.data, view.dtype, i); }

}  // namespace pagellm
