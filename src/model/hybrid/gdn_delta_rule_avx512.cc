// AVX-512 gated delta rule kernels (16 fp32 lanes). Algorithm in gdn_delta_rule_impl.inc;
// everything after the pragma is compiled for AVX-512 and runs only when the backend's
// DetectCpuIsa() says kAvx512. Headers come first so no shared inline code gets AVX-512.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "model/hybrid/gdn_delta_rule_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl")
// GCC 12 reports false "uninitialized" warnings inside its own avx512fintrin.h reductions.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace pagellm::gdn_internal {
namespace {

struct Simd {
  using V = __m512;
  static constexpr int64_t kWidth = 16;
  static constexpr int kGemmRows = 4;  // 4 x 4 accumulators + 4 B vectors of 32 zmm
  static constexpr int kGemmCols = 4;
  static V Zero() { return _mm512_setzero_ps(); }
  static V Set1(float a) { return _mm512_set1_ps(a); }
  static V Load(const float* p) { return _mm512_loadu_ps(p); }
  static void Store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V Fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V Mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V Add(V a, V b) { return _mm512_add_ps(a, b); }
  static V Sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static float ReduceAdd(V v) { return _mm512_reduce_add_ps(v); }
};

#include "model/hybrid/gdn_delta_rule_impl.inc"

}  // namespace

void RecurrentHeadAvx512(const HeadArgs& a) { RecurrentHeadImpl(a); }
void ChunkedHeadAvx512(const HeadArgs& a, float* scratch) { ChunkedHeadImpl(a, scratch); }

}  // namespace pagellm::gdn_internal

#pragma GCC pop_options
