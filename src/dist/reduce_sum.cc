#include "dist/reduce_sum.h"

#include <algorithm>

#include "tensor/half.h"

namespace pagellm::dist {

// Plain loops: GCC vectorizes them at -O2 (8 floats per AVX2 add); the sums are
// memory-bound, so nothing cleverer pays for 8-64 KB decode messages.
void SumF32(const float* const* srcs, int num_srcs, int64_t n, float* out) {
  const float* a = srcs[0];
  if (num_srcs == 1) {
    if (out != a) std::copy(a, a + n, out);
    return;
  }
  const float* b = srcs[1];
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
  for (int s = 2; s < num_srcs; ++s) {
    const float* c = srcs[s];
    for (int64_t i = 0; i < n; ++i) out[i] += c[i];
  }
}

void SumBf16(const uint16_t* const* srcs, int num_srcs, int64_t n, uint16_t* out) {
  constexpr int64_t kBlock = 512;
  float acc[kBlock];
  for (int64_t base = 0; base < n; base += kBlock) {
    const int64_t m = std::min(kBlock, n - base);
    for (int64_t i = 0; i < m; ++i) acc[i] = Bf16ToF32(srcs[0][base + i]);
    for (int s = 1; s < num_srcs; ++s) {
      const uint16_t* c = srcs[s] + base;
      for (int64_t i = 0; i < m; ++i) acc[i] += Bf16ToF32(c[i]);
    }
    for (int64_t i = 0; i < m; ++i) out[base + i] = F32ToBf16(acc[i]);
  }
}

}  // namespace pagellm::dist
