#include "model/hybrid/gdn_conv.h"

#include <cmath>
#include <cstring>

#include "common/parallel_for.h"
#include "common/status.h"

namespace pagellm {
namespace {

inline float Silu(float u) { return u / (1.0f + std::exp(-u)); }

// One output row: taps[i] points at input row t-(K-1)+i (from x or from the state).
void ConvRow(const float* const* taps, const float* weight, int64_t kernel, int64_t conv_dim, float* out) {
  if (kernel == 4) {  // every Qwen model; lets the compiler keep the four rows in registers
    const float *r0 = taps[0], *r1 = taps[1], *r2 = taps[2], *r3 = taps[3];
    for (int64_t ch = 0; ch < conv_dim; ++ch) {
      const float* w = weight + ch * 4;
      out[ch] = Silu(w[0] * r0[ch] + w[1] * r1[ch] + w[2] * r2[ch] + w[3] * r3[ch]);
    }
    return;
  }
  for (int64_t ch = 0; ch < conv_dim; ++ch) {
    float acc = 0.0f;
    for (int64_t i = 0; i < kernel; ++i) acc += weight[ch * kernel + i] * taps[i][ch];
    out[ch] = Silu(acc);
  }
}

}  // namespace

void GdnCausalConvSilu(const GdnDims& dims, const float* x, int64_t num_tokens, const float* weight,
                       float* conv_state, float* out) {
  const int64_t kernel = dims.conv_kernel, conv_dim = dims.conv_dim(), hist = kernel - 1;
  PAGELLM_CHECK(kernel >= 1 && kernel <= 8);
  PAGELLM_CHECK(out != x);
  ParallelFor(num_tokens, num_tokens * conv_dim > 65536, [&](int64_t t) {
    const float* taps[8];
    for (int64_t i = 0; i < kernel; ++i) {
      const int64_t s = t - hist + i;
      taps[i] = s >= 0 ? x + s * conv_dim : conv_state + (hist + s) * conv_dim;
    }
    ConvRow(taps, weight, kernel, conv_dim, out + t * conv_dim);
  });
  // New state row j holds input time T - hist + j. For T < hist the old rows shift down;
  // ascending j reads old row j + T >= j, so the in-place shift is safe.
  const size_t row_bytes = static_cast<size_t>(conv_dim) * sizeof(float);
  for (int64_t j = 0; j < hist; ++j) {
    const int64_t s = num_tokens - hist + j;
    const float* src = s >= 0 ? x + s * conv_dim : conv_state + (j + num_tokens) * conv_dim;
    if (src != conv_state + j * conv_dim) std::memmove(conv_state + j * conv_dim, src, row_bytes);
  }
}

}  // namespace pagellm
