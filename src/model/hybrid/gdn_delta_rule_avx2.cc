// AVX2 gated delta rule kernels (8 fp32 lanes). Algorithm in gdn_delta_rule_impl.inc.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "model/hybrid/gdn_delta_rule_kernels.h"

namespace pagellm::gdn_internal {
namespace {

struct Simd {
  using V = __m256;
  static constexpr int64_t kWidth = 8;
  static constexpr int kGemmRows = 4;  // 4 x 2 accumulators + 2 B vectors of 16 ymm
  static constexpr int kGemmCols = 2;
  static V Zero() { return _mm256_setzero_ps(); }
  static V Set1(float a) { return _mm256_set1_ps(a); }
  static V Load(const float* p) { return _mm256_loadu_ps(p); }
  static void Store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V Fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V Mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V Add(V a, V b) { return _mm256_add_ps(a, b); }
  static V Sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static float ReduceAdd(V v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
};

#include "model/hybrid/gdn_delta_rule_impl.inc"

}  // namespace

void RecurrentHeadAvx2(const HeadArgs& a) { RecurrentHeadImpl(a); }
void ChunkedHeadAvx2(const HeadArgs& a, float* scratch) { ChunkedHeadImpl(a, scratch); }

}  // namespace pagellm::gdn_internal
