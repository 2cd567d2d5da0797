#include "model/hybrid/gdn_gated_norm.h"

#include <cmath>

#include "common/parallel_for.h"

namespace pagellm {

void GdnGatedRmsNorm(const GdnDims& dims, int64_t num_tokens, const float* o, const float* z,
                     const float* weight, float eps, float* y) {
  const int64_t dv = dims.v_head_dim, rows = num_tokens * dims.num_v_heads;
  ParallelFor(rows, rows * dv > 65536, [&](int64_t r) {
    const float* x = o + r * dv;
    const float* zr = z + r * dv;
    float* yr = y + r * dv;
    float sum = 0.0f;
    for (int64_t i = 0; i < dv; ++i) sum += x[i] * x[i];
    const float inv_rms = 1.0f / std::sqrt(sum / static_cast<float>(dv) + eps);
    for (int64_t i = 0; i < dv; ++i) {
      const float silu_z = zr[i] / (1.0f + std::exp(-zr[i]));
      yr[i] = weight[i] * (x[i] * inv_rms) * silu_z;
    }
  });
}

}  // namespace pagellm
