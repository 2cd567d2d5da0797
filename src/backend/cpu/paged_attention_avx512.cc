// AVX-512 paged attention (16 fp32 lanes). The algorithm is in paged_attention_impl.inc;
// everything after the pragma is compiled for AVX-512 and runs only when
// CpuSupportsAvx512Bf16(). Headers come first so no shared inline code gets AVX-512.
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <omp.h>
#include <vector>

#include "backend/cpu/paged_attention_cpu.h"
#include "backend/cpu/share_items.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512bf16")
// GCC 12 reports false "uninitialized" warnings inside its own avx512fintrin.h reductions.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace pagellm {
namespace {

struct Bf16 { uint16_t bits; };
struct F16 { uint16_t bits; };

struct Simd {
  using V = __m512;
  static constexpr int64_t kWidth = 16;
  static constexpr int kRegisters = 32;
  static V Zero() { return _mm512_setzero_ps(); }
  static V Set1(float a) { return _mm512_set1_ps(a); }
  static V Load(const float* p) { return _mm512_loadu_ps(p); }
  static void Store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V LoadKv(const float* p) { return _mm512_loadu_ps(p); }
  static V LoadKv(const Bf16* p) {
    __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
  }
  static V LoadKv(const F16* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static V Fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V Mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V Add(V a, V b) { return _mm512_add_ps(a, b); }
  static float ReduceAdd(V v) { return _mm512_reduce_add_ps(v); }
  static V Max(V a, V b) { return _mm512_max_ps(a, b); }
  static float ReduceMax(V v) { return _mm512_reduce_max_ps(v); }
  // result[i] = sum of the lanes of v[i], i < 16: a transpose-add tree (45 instructions
  // for 16 sums instead of ~10 per _mm512_reduce_add_ps), in two stages: ReduceQuad folds
  // four vectors into one whose 128-bit lane l holds lane l's sum of each, FinishTile
  // sums the four lanes of each of the four quads. Callers that have a tile's vectors
  // four at a time (BlockScores) run the stages apart, with the same arithmetic.
  static V ReduceQuad(const V* v) {
    // Pairs of vectors: per 128-bit lane [a0+a2, b0+b2, a1+a3, b1+b3].
    const V t0 = _mm512_add_ps(_mm512_unpacklo_ps(v[0], v[1]), _mm512_unpackhi_ps(v[0], v[1]));
    const V t1 = _mm512_add_ps(_mm512_unpacklo_ps(v[2], v[3]), _mm512_unpackhi_ps(v[2], v[3]));
    // Per 128-bit lane: the lane's sum of v[0], v[1], v[2], v[3].
    const __m512d lo = _mm512_unpacklo_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t1));
    const __m512d hi = _mm512_unpackhi_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t1));
    return _mm512_add_ps(_mm512_castpd_ps(lo), _mm512_castpd_ps(hi));
  }
  static V FinishTile(const V* u) {  // u: kWidth / 4 quads
    // Sum the four 128-bit lanes of each u[j] and place it in lane j.
    const V p01 = _mm512_add_ps(_mm512_shuffle_f32x4(u[0], u[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                _mm512_shuffle_f32x4(u[0], u[1], _MM_SHUFFLE(3, 1, 3, 1)));
    const V p23 = _mm512_add_ps(_mm512_shuffle_f32x4(u[2], u[3], _MM_SHUFFLE(2, 0, 2, 0)),
                                _mm512_shuffle_f32x4(u[2], u[3], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_add_ps(_mm512_shuffle_f32x4(p01, p23, _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(p01, p23, _MM_SHUFFLE(3, 1, 3, 1)));
  }
  static V ReduceTile(const V* v) {
    const V u[4] = {ReduceQuad(v), ReduceQuad(v + 4), ReduceQuad(v + 8), ReduceQuad(v + 12)};
    return FinishTile(u);
  }
  // exp(x) to ~2 ulp for x in [-87, 88]; same polynomial as the AVX2 Simd::Exp.
  static V Exp(V x) {
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.3f));
    V n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    V r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    V p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
  }
};

#include "backend/cpu/paged_attention_impl.inc"

}  // namespace

void PagedAttentionAvx512(const float* q, const KvLayerView& cache, const AttentionBatch& batch,
                          const AttentionDims& dims, float* out) {
  Dispatch(q, cache, batch, dims, out);
}

}  // namespace pagellm

#pragma GCC pop_options
