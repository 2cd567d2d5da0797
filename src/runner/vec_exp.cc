#include "runner/vec_exp.h"

#include <immintrin.h>

#include <cmath>

namespace pagellm {
namespace {

// exp(x) = 2^k * exp(r), x = k ln2 + r, |r| <= ln2/2; exp(r) by the Cephes expf
// degree-5 polynomial. ln2 is split in two parts so r is computed without loss.
inline __m256 Exp8(__m256 x) {
  const __m256 lo_limit = _mm256_set1_ps(-87.3f);
  const __m256 zero_mask = _mm256_cmp_ps(x, lo_limit, _CMP_LT_OQ);  // also catches -inf
  x = _mm256_min_ps(_mm256_max_ps(x, lo_limit), _mm256_set1_ps(88.3f));
  const __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(k, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i bits = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
  const __m256 result = _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
  return _mm256_andnot_ps(zero_mask, result);
}

inline double HorizontalSum(__m256d a, __m256d b) {
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(a, b));
  return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
}

inline float ExpScalar(float x) {
  __m256 v = Exp8(_mm256_set1_ps(x));
  return _mm256_cvtss_f32(v);
}

}  // namespace

double ExpWeights(const float* z, int32_t n, float temperature, float shift, float min_weight,
                  float* out) {
  const __m256 t = _mm256_set1_ps(temperature);
  const __m256 s = _mm256_set1_ps(shift);
  const __m256 m = _mm256_set1_ps(min_weight);
  __m256d acc_lo = _mm256_setzero_pd(), acc_hi = _mm256_setzero_pd();
  int32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    // Division (not a reciprocal multiply) so z / T rounds exactly like vLLM's div_.
    __m256 w = Exp8(_mm256_sub_ps(_mm256_div_ps(_mm256_loadu_ps(z + i), t), s));
    w = _mm256_and_ps(w, _mm256_cmp_ps(w, m, _CMP_GE_OQ));
    _mm256_storeu_ps(out + i, w);
    acc_lo = _mm256_add_pd(acc_lo, _mm256_cvtps_pd(_mm256_castps256_ps128(w)));
    acc_hi = _mm256_add_pd(acc_hi, _mm256_cvtps_pd(_mm256_extractf128_ps(w, 1)));
  }
  double total = HorizontalSum(acc_lo, acc_hi);
  for (; i < n; ++i) {
    const float w = ExpScalar(z[i] / temperature - shift);
    out[i] = w >= min_weight ? w : 0.0f;
    total += out[i];
  }
  return total;
}

double SumExp(const float* z, int32_t n, float shift) {
  const __m256 s = _mm256_set1_ps(shift);
  __m256d acc_lo = _mm256_setzero_pd(), acc_hi = _mm256_setzero_pd();
  int32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 w = Exp8(_mm256_sub_ps(_mm256_loadu_ps(z + i), s));
    acc_lo = _mm256_add_pd(acc_lo, _mm256_cvtps_pd(_mm256_castps256_ps128(w)));
    acc_hi = _mm256_add_pd(acc_hi, _mm256_cvtps_pd(_mm256_extractf128_ps(w, 1)));
  }
  double total = HorizontalSum(acc_lo, acc_hi);
  for (; i < n; ++i) total += ExpScalar(z[i] - shift);
  return total;
}

}  // namespace pagellm
