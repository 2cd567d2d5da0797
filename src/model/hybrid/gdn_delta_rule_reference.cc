// GdnRecurrentReference: the scalar twin of the delta-rule kernels (see gdn_delta_rule.h).
#include <cmath>
#include <vector>

#include "model/hybrid/gdn_delta_rule.h"

namespace pagellm {

void GdnRecurrentReference(const GdnDims& dims, const GdnInputs& in, float* state, float* out) {
  const int64_t nv = dims.num_v_heads, dk = dims.k_head_dim, dv = dims.v_head_dim;
  std::vector<float> kv(dv), delta(dv);
  for (int64_t t = 0; t < in.num_tokens; ++t) {
    for (int64_t h = 0; h < nv; ++h) {
      const int64_t kh = dims.KeyHeadOf(h);
      const float* q = in.q + t * in.q_stride + kh * dk;
      const float* k = in.k + t * in.k_stride + kh * dk;
      const float* v = in.v + t * in.v_stride + h * dv;
      const float beta = in.beta[t * nv + h], decay = std::exp(in.g[t * nv + h]);
      float* S = state + h * dk * dv;  // [dk, dv]
      for (int64_t i = 0; i < dk * dv; ++i) S[i] *= decay;
      for (int64_t j = 0; j < dv; ++j) {
        kv[j] = 0.0f;
        for (int64_t i = 0; i < dk; ++i) kv[j] += S[i * dv + j] * k[i];
        delta[j] = beta * (v[j] - kv[j]);
      }
      for (int64_t i = 0; i < dk; ++i)
        for (int64_t j = 0; j < dv; ++j) S[i * dv + j] += k[i] * delta[j];
      float* o = out + (t * nv + h) * dv;
      for (int64_t j = 0; j < dv; ++j) {
        o[j] = 0.0f;
        for (int64_t i = 0; i < dk; ++i) o[j] += S[i * dv + j] * q[i];
      }
    }
  }
}

}  // namespace pagellm
