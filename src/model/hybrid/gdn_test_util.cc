#include "model/hybrid/gdn_test_util.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "model/hybrid/gdn_delta_rule.h"
#include "model/hybrid/gdn_delta_rule_kernels.h"

namespace pagellm {

std::vector<float> RandomUniform(int64_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> out(n);
  for (float& x : out) x = dist(rng);
  return out;
}

float MaxAbsDiff(std::span<const float> a, std::span<const float> b) {
  float m = a.size() == b.size() ? 0.0f : INFINITY;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const float d = std::fabs(a[i] - b[i]);
    if (!(d <= m)) m = d;  // NaN propagates as the max
  }
  return m;
}

float MaxAbs(std::span<const float> a) {
  float m = 0.0f;
  for (float x : a) m = std::max(m, std::fabs(x));
  return m;
}

GdnInputs GdnTestData::inputs(int64_t t0, int64_t n) const {
  if (n < 0) n = num_tokens - t0;
  const int64_t kd = dims.key_dim(), vd = dims.value_dim(), nv = dims.num_v_heads;
  return GdnInputs{.num_tokens = n,
                   .q = q.data() + t0 * kd,
                   .k = k.data() + t0 * kd,
                   .v = v.data() + t0 * vd,
                   .q_stride = kd,
                   .k_stride = kd,
                   .v_stride = vd,
                   .beta = beta.data() + t0 * nv,
                   .g = g.data() + t0 * nv};
}

GdnTestData MakeRandomGdnData(const GdnDims& dims, int64_t num_tokens, uint32_t seed, float g_min) {
  GdnTestData d;
  d.dims = dims;
  d.num_tokens = num_tokens;
  const int64_t dk = dims.k_head_dim;
  d.q = RandomUniform(num_tokens * dims.key_dim(), seed, -1.0f, 1.0f);
  d.k = RandomUniform(num_tokens * dims.key_dim(), seed + 1, -1.0f, 1.0f);
  d.v = RandomUniform(num_tokens * dims.value_dim(), seed + 2, -1.0f, 1.0f);
  d.beta = RandomUniform(num_tokens * dims.num_v_heads, seed + 3, 0.01f, 0.99f);
  d.g = RandomUniform(num_tokens * dims.num_v_heads, seed + 4, g_min, 0.0f);
  for (int64_t row = 0; row < num_tokens * dims.num_k_heads; ++row) {
    for (auto* vec : {&d.q, &d.k}) {
      float* x = vec->data() + row * dk;
      double sum = 0.0;
      for (int64_t i = 0; i < dk; ++i) sum += double(x[i]) * x[i];
      const double f = (vec == &d.q ? 1.0 / std::sqrt(double(dk)) : 1.0) / std::sqrt(sum);
      for (int64_t i = 0; i < dk; ++i) x[i] = static_cast<float>(x[i] * f);
    }
  }
  return d;
}

void RunChunkedWithIsa(CpuIsa isa, const GdnDims& dims, const GdnInputs& in, float* state, float* out,
                       int64_t chunk_size) {
  std::vector<float> scratch(GdnChunkedScratchFloats(dims));
  for (int64_t h = 0; h < dims.num_v_heads; ++h) {
    auto a = gdn_internal::MakeHeadArgs(dims, in, 0, in.num_tokens, h, state, out);
    a.chunk_size = chunk_size;
    if (isa == CpuIsa::kAvx512) {
      gdn_internal::ChunkedHeadAvx512(a, scratch.data());
    } else {
      gdn_internal::ChunkedHeadAvx2(a, scratch.data());
    }
  }
}

void RunRecurrentWithIsa(CpuIsa isa, const GdnDims& dims, const GdnInputs& in, float* state, float* out) {
  for (int64_t h = 0; h < dims.num_v_heads; ++h) {
    const auto a = gdn_internal::MakeHeadArgs(dims, in, 0, in.num_tokens, h, state, out);
    if (isa == CpuIsa::kAvx512) {
      gdn_internal::RecurrentHeadAvx512(a);
    } else {
      gdn_internal::RecurrentHeadAvx2(a);
    }
  }
}

std::vector<CpuIsa> SupportedIsas() {
  std::vector<CpuIsa> isas{CpuIsa::kAvx2};
  if (CpuSupportsAvx512Bf16()) isas.push_back(CpuIsa::kAvx512);
  return isas;
}

}  // namespace pagellm
