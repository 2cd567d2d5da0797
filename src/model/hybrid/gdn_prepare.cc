#include "model/hybrid/gdn_prepare.h"

#include <cmath>

#include "common/parallel_for.h"

namespace pagellm {
namespace {

// x[0..n) *= scale * rsqrt(sum(x^2) + 1e-6), sum in fp32 like HF's fp32 l2norm.
void L2NormalizeInPlace(float* x, int64_t n, float scale) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += x[i] * x[i];
  const float factor = scale / std::sqrt(sum + 1e-6f);
  for (int64_t i = 0; i < n; ++i) x[i] *= factor;
}

inline float Softplus(float u) { return u > 20.0f ? u : std::log1p(std::exp(u)); }

}  // namespace

void GdnNormalizeQk(const GdnDims& dims, int64_t num_tokens, float* conv_out) {
  const int64_t nk = dims.num_k_heads, dk = dims.k_head_dim, conv_dim = dims.conv_dim();
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(dk));
  ParallelFor(num_tokens, num_tokens > 16, [&](int64_t t) {
    float* row = conv_out + t * conv_dim;
    for (int64_t h = 0; h < 2 * nk; ++h) L2NormalizeInPlace(row + h * dk, dk, h < nk ? q_scale : 1.0f);
  });
}

void GdnComputeGates(const GdnDims& dims, int64_t num_tokens, const float* b, const float* a,
                     const float* a_log, const float* dt_bias, float* beta, float* g) {
  const int64_t nv = dims.num_v_heads;
  for (int64_t t = 0; t < num_tokens; ++t) {
    for (int64_t h = 0; h < nv; ++h) {
      const int64_t i = t * nv + h;
      beta[i] = 1.0f / (1.0f + std::exp(-b[i]));
      g[i] = -std::exp(a_log[h]) * Softplus(a[i] + dt_bias[h]);
    }
  }
}

GdnInputs GdnInputsFromConvOut(const GdnDims& dims, int64_t num_tokens, const float* conv_out,
                               const float* beta, const float* g) {
  const int64_t conv_dim = dims.conv_dim();
  return GdnInputs{.num_tokens = num_tokens,
                   .q = conv_out,
                   .k = conv_out + dims.key_dim(),
                   .v = conv_out + 2 * dims.key_dim(),
                   .q_stride = conv_dim,
                   .k_stride = conv_dim,
                   .v_stride = conv_dim,
                   .beta = beta,
                   .g = g};
}

}  // namespace pagellm
