// AVX-512 activation quantizer of the packed k-quant linear (kquant_packed.h): rows of
// fp32 activations -> QuantizeRowQ8_K's bytes, scales and 16-sums, bit for bit. Blocks
// holding NaN or inf, or whose largest magnitude is below 1e-30, take the scalar
// QuantizeRowQ8_K (its comparisons skip NaN, which vmaxps does not; its clamps define an
// overflowing -127 / max).
#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "backend/cpu/kquant_packed_kernels.h"
#include "backend/kquant_gemm.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,fma")
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace pagellm::kquant_packed {
namespace {

// One block of 256 at x; false (nothing written) when it holds a non-finite value.
bool QuantizeBlock(const float* x, int8_t* q, float* d, int32_t* bsum16) {
  const __m512 inf = _mm512_set1_ps(INFINITY);
  __m512 amax_v = _mm512_setzero_ps();
  __mmask16 bad = 0;
  for (int c = 0; c < 16; ++c) {
    const __m512 a = _mm512_abs_ps(_mm512_loadu_ps(x + 16 * c));
    bad |= _mm512_cmp_ps_mask(a, inf, _CMP_NLT_UQ);  // inf or NaN
    amax_v = _mm512_max_ps(amax_v, a);
  }
  const float amax = _mm512_reduce_max_ps(amax_v);
  if (bad != 0 || (amax != 0.0f && amax < 1e-30f)) return false;  // non-finite, or -127 / max may overflow
  if (amax == 0.0f) {
    *d = 0.0f;
    std::memset(q, 0, 256);
    std::memset(bsum16, 0, 16 * sizeof(int32_t));
    return true;
  }
  // The first value of largest magnitude keeps its sign (QuantizeRowQ8_K's strict '>').
  float max = 0.0f;
  const __m512 amax_b = _mm512_set1_ps(amax);
  for (int c = 0; c < 16; ++c) {
    const __mmask16 hit = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_loadu_ps(x + 16 * c)), amax_b, _CMP_EQ_OQ);
    if (hit != 0) {
      max = x[16 * c + __builtin_ctz(hit)];
      break;
    }
  }
  const float iscale = -127.0f / max;
  const __m512 is = _mm512_set1_ps(iscale);
  const __m512i cap = _mm512_set1_epi32(127);
  for (int c = 0; c < 16; ++c) {
    const __m512i v = _mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(is, _mm512_loadu_ps(x + 16 * c))), cap);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16 * c), _mm512_cvtsepi32_epi8(v));
    bsum16[c] = _mm512_reduce_add_epi32(v);
  }
  *d = 1.0f / iscale;
  return true;
}

}  // namespace

void QuantizeRowQ8_KAvx512(const float* x, int64_t k, int8_t* q, float* d, int32_t* bsum16) {
  for (int64_t b = 0; b < k / 256; ++b) {
    if (!QuantizeBlock(x + 256 * b, q + 256 * b, d + b, bsum16 + 16 * b)) {
      QuantizeRowQ8_K(x + 256 * b, 256, q + 256 * b, d + b, bsum16 + 16 * b);
    }
  }
}

}  // namespace pagellm::kquant_packed

#pragma GCC pop_options
