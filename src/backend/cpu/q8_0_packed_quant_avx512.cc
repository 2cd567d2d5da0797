// AVX-512 activation quantizer of the packed Q8_0 linear (q8_0_packed.h): rows of fp32
// activations -> QuantizeRowQ8_0's bytes and scales plus the -128 * block sums the VNNI
// kernel starts from. 16 blocks at a time: their maxima, scales and sums are reduced
// into one zmm each (two vpermt2 per pair and level) instead of 16 horizontal
// reductions; one thread, M = 512, K = 1024: ~5 ns per block vs ~21-25 for the AVX2
// QuantizeBlock plus a scalar sum loop it replaces (which remains the fallback for
// blocks with NaN, inf or amax < 1e-30, so their bytes are unchanged).
//
//   QuantizeActsAvx512(x, k, /*m_begin=*/0, /*m_end=*/m, q, d, corr);
#include <immintrin.h>

#include <cstring>
#include <limits>

#include "backend/cpu/int8_gemm_kernels.h"
#include "backend/cpu/q8_0_packed_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,f16c,fma")
#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC 12 false positives inside the intrinsics
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace pagellm::q8_0_packed {
namespace {

// One block at x -> q [32], *d, *corr.
void QuantizeOneBlock(const float* x, int8_t* q, float* d, int32_t* corr) {
  const __m512 a0 = _mm512_abs_ps(_mm512_loadu_ps(x)), a1 = _mm512_abs_ps(_mm512_loadu_ps(x + 16));
  const float amax = _mm512_reduce_max_ps(_mm512_max_ps(a0, a1));
  // NaN or inf anywhere (the max may drop a NaN), or a scale whose inverse overflows:
  // the AVX2 quantizer that ran here before, byte for byte.
  const __m512 fmax = _mm512_set1_ps(std::numeric_limits<float>::max());
  if ((_mm512_cmp_ps_mask(a0, fmax, _CMP_NLE_UQ) | _mm512_cmp_ps_mask(a1, fmax, _CMP_NLE_UQ)) != 0 ||
      (amax != 0.0f && amax < 1e-30f)) {
    *d = int8_gemm::QuantizeBlock(x, /*offset=*/false, reinterpret_cast<uint8_t*>(q));
    int32_t sum = 0;
    for (int j = 0; j < kQ8_0BlockElements; ++j) sum += q[j];
    *corr = -128 * sum;
    return;
  }
  // d = fp16(amax / 127) (vcvtps2ph rounds to nearest even, as F32ToF16), widened.
  *d = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtps_ph(_mm_set_ss(amax / 127.0f), _MM_FROUND_TO_NEAREST_INT)));
  const __m512 id = _mm512_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
  // |x * id| <= 127 (plus rounding), so the int32 sum below is the sum of the bytes.
  const __m512i n0 = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x), id));
  const __m512i n1 = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + 16), id));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm512_cvtsepi32_epi8(n0));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16), _mm512_cvtsepi32_epi8(n1));
  *corr = -128 * _mm512_reduce_add_epi32(_mm512_add_epi32(n0, n1));
}

inline __m512 Permute2(__m512 a, __m512i idx, __m512 b) { return _mm512_permutex2var_ps(a, idx, b); }
inline __m512i Permute2(__m512i a, __m512i idx, __m512i b) { return _mm512_permutex2var_epi32(a, idx, b); }

// v[0..15] (16 lanes each) -> one vector whose lane i is op over v[i]'s lanes; v is
// clobbered. Pairs merge in 4 levels of two vpermt2 and one op: 30 permutes and 15 ops
// for 16 blocks instead of 16 horizontal reductions of 8 steps.
template <typename V, typename Op>
V ReduceTranspose16(V* v, Op op) {
  // Level l merges pairs holding 2^l blocks of 16 >> l lanes each (a's blocks, then b's):
  // out lane j takes lanes lo[j] and lo[j] + half of (a, b) (16 + i is b's lane i).
  alignas(64) static constexpr int32_t kLo[4][16] = {
      {0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23},
      {0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27},
      {0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29},
      {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30}};
  #pragma GCC unroll 4
  for (int l = 0; l < 4; ++l) {
    const int half = 8 >> l;
    const __m512i il = _mm512_load_si512(kLo[l]), ih = _mm512_add_epi32(il, _mm512_set1_epi32(half));
    #pragma GCC unroll 8
    for (int i = 0; i < (8 >> l); ++i) {
      v[i] = op(Permute2(v[2 * i], il, v[2 * i + 1]), Permute2(v[2 * i], ih, v[2 * i + 1]));
    }
  }
  return v[0];
}

struct MaxOp {
  __m512 operator()(__m512 u, __m512 v) const { return _mm512_max_ps(u, v); }
};
struct AddOp {
  __m512i operator()(__m512i u, __m512i v) const { return _mm512_add_epi32(u, v); }
};

// 16 consecutive blocks at x (512 values), as QuantizeOneBlock each, with the block
// maxima, scales and sums computed 16 at a time. False (nothing written) if a block
// needs QuantizeOneBlock's fallback.
bool Quantize16Blocks(const float* x, int8_t* q, float* d, int32_t* corr) {
  const __m512 fmax = _mm512_set1_ps(std::numeric_limits<float>::max());
  __m512 a[16];
  __mmask16 bad = 0;
  #pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) {
    const __m512 a0 = _mm512_abs_ps(_mm512_loadu_ps(x + 32 * i)), a1 = _mm512_abs_ps(_mm512_loadu_ps(x + 32 * i + 16));
    bad |= _mm512_cmp_ps_mask(a0, fmax, _CMP_NLE_UQ) | _mm512_cmp_ps_mask(a1, fmax, _CMP_NLE_UQ);
    a[i] = _mm512_max_ps(a0, a1);
  }
  const __m512 amax = ReduceTranspose16(a, MaxOp{});
  const __mmask16 nonzero = _mm512_cmp_ps_mask(amax, _mm512_setzero_ps(), _CMP_NEQ_OQ);
  if (bad != 0 || (_mm512_cmp_ps_mask(amax, _mm512_set1_ps(1e-30f), _CMP_LT_OQ) & nonzero) != 0) return false;
  // The same IEEE divisions as the scalar code, 16 lanes at once.
  const __m512 dv = _mm512_div_ps(amax, _mm512_set1_ps(127.0f));
  _mm512_storeu_ps(d, _mm512_cvtph_ps(_mm512_cvtps_ph(dv, _MM_FROUND_TO_NEAREST_INT)));
  alignas(64) float id[16];
  _mm512_store_ps(id, _mm512_maskz_div_ps(nonzero, _mm512_set1_ps(127.0f), amax));
  __m512i sums[16];
  #pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) {
    const __m512 idv = _mm512_set1_ps(id[i]);
    const __m512i n0 = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + 32 * i), idv));
    const __m512i n1 = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + 32 * i + 16), idv));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 32 * i), _mm512_cvtsepi32_epi8(n0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 32 * i + 16), _mm512_cvtsepi32_epi8(n1));
    sums[i] = _mm512_add_epi32(n0, n1);
  }
  const __m512i sum = ReduceTranspose16(sums, AddOp{});
  _mm512_storeu_si512(corr, _mm512_mullo_epi32(sum, _mm512_set1_epi32(-128)));
  return true;
}

}  // namespace

void QuantizeActsAvx512(const float* x, int64_t k, int64_t m_begin, int64_t m_end, int8_t* q, float* d,
                        int32_t* corr) {
  const int64_t nb = k / kQ8_0BlockElements;
  for (int64_t m = m_begin; m < m_end; ++m) {
    int64_t b = 0;
    for (; b + 16 <= nb; b += 16) {
      const int64_t i = m * k + b * kQ8_0BlockElements;
      if (Quantize16Blocks(x + i, q + i, d + m * nb + b, corr + m * nb + b)) continue;
      for (int64_t j = b; j < b + 16; ++j) {
        const int64_t e = m * k + j * kQ8_0BlockElements;
        QuantizeOneBlock(x + e, q + e, d + m * nb + j, corr + m * nb + j);
      }
    }
    for (; b < nb; ++b) {
      const int64_t i = m * k + b * kQ8_0BlockElements;
      QuantizeOneBlock(x + i, q + i, d + m * nb + b, corr + m * nb + b);
    }
  }
}

}  // namespace pagellm::q8_0_packed

#pragma GCC pop_options
