// AVX2 paged attention (8 fp32 lanes). The algorithm is in paged_attention_impl.inc.
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <omp.h>
#include <vector>

#include "backend/cpu/avx2_math.h"
#include "backend/cpu/paged_attention_cpu.h"
#include "backend/cpu/share_items.h"

namespace pagellm {
namespace {

struct Bf16 { uint16_t bits; };
struct F16 { uint16_t bits; };

struct Simd {
  using V = __m256;
  static constexpr int64_t kWidth = 8;
  static constexpr int kRegisters = 16;
  static V Zero() { return _mm256_setzero_ps(); }
  static V Set1(float a) { return _mm256_set1_ps(a); }
  static V Load(const float* p) { return _mm256_loadu_ps(p); }
  static void Store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V LoadKv(const float* p) { return _mm256_loadu_ps(p); }
  static V LoadKv(const Bf16* p) {
    __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
  static V LoadKv(const F16* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static V Fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V Mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V Add(V a, V b) { return _mm256_add_ps(a, b); }
  static float ReduceAdd(V v) { return avx2::HorizontalSum(v); }
  static V Max(V a, V b) { return _mm256_max_ps(a, b); }
  static float ReduceMax(V v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
  }
  // result[i] = sum of the lanes of v[i], i < 8 (transpose-add tree), in two stages as on
  // AVX-512: ReduceQuad folds four vectors (per 128-bit lane: 4 sums), FinishTile the two.
  static V ReduceQuad(const V* v) {
    const V t0 = _mm256_add_ps(_mm256_unpacklo_ps(v[0], v[1]), _mm256_unpackhi_ps(v[0], v[1]));
    const V t1 = _mm256_add_ps(_mm256_unpacklo_ps(v[2], v[3]), _mm256_unpackhi_ps(v[2], v[3]));
    const __m256d lo = _mm256_unpacklo_pd(_mm256_castps_pd(t0), _mm256_castps_pd(t1));
    const __m256d hi = _mm256_unpackhi_pd(_mm256_castps_pd(t0), _mm256_castps_pd(t1));
    return _mm256_add_ps(_mm256_castpd_ps(lo), _mm256_castpd_ps(hi));  // per 128-bit lane: 4 sums
  }
  static V FinishTile(const V* u) {  // u: kWidth / 4 quads
    return _mm256_add_ps(_mm256_permute2f128_ps(u[0], u[1], 0x20), _mm256_permute2f128_ps(u[0], u[1], 0x31));
  }
  static V ReduceTile(const V* v) {
    const V u[2] = {ReduceQuad(v), ReduceQuad(v + 4)};
    return FinishTile(u);
  }
  static V Exp(V x) { return avx2::Exp(x); }
};

#include "backend/cpu/paged_attention_impl.inc"

}  // namespace

void PagedAttentionAvx2(const float* q, const KvLayerView& cache, const AttentionBatch& batch,
                        const AttentionDims& dims, float* out) {
  Dispatch(q, cache, batch, dims, out);
}

}  // namespace pagellm
