#include "model/hybrid/gated_attention.h"

#include <cmath>
#include <cstring>

#include "common/parallel_for.h"

namespace pagellm {

void SplitQueryGate(const float* qg, int64_t num_tokens, int64_t num_heads, int64_t head_dim, float* q,
                    float* gate) {
  const size_t bytes = static_cast<size_t>(head_dim) * sizeof(float);
  for (int64_t row = 0; row < num_tokens * num_heads; ++row) {
    std::memcpy(q + row * head_dim, qg + row * 2 * head_dim, bytes);
    std::memcpy(gate + row * head_dim, qg + row * 2 * head_dim + head_dim, bytes);
  }
}

void ZeroCenteredRmsNorm(const float* x, const float* w, int64_t rows, int64_t dim, float eps, float* y) {
  ParallelFor(rows, rows * dim > 65536, [&](int64_t r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    float sum = 0.0f;
    for (int64_t i = 0; i < dim; ++i) sum += xr[i] * xr[i];
    const float inv_rms = 1.0f / std::sqrt(sum / static_cast<float>(dim) + eps);
    for (int64_t i = 0; i < dim; ++i) yr[i] = (xr[i] * inv_rms) * (1.0f + w[i]);
  });
}

void FoldZeroCenteredWeight(const float* w, int64_t dim, float* out) {
  for (int64_t i = 0; i < dim; ++i) out[i] = 1.0f + w[i];
}

void ApplySigmoidGate(const float* gate, int64_t n, float* x) {
  ParallelFor(n, n > 65536, [&](int64_t i) { x[i] *= 1.0f / (1.0f + std::exp(-gate[i])); });
}

}  // namespace pagellm
