// AVX-512 paged attention (16 fp32 lanes). The algorithm is in paged_attention_impl.inc;
// everything after the pragma is compiled for AVX-512 and runs only when
// CpuSupportsAvx512Bf16(). Headers come first so no shared inline code gets AVX-512.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backend/cpu/paged_attention_cpu.h"

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
};

#include "backend/cpu/paged_attention_impl.inc"

}  // namespace

void PagedAttentionAvx512(const float* q, const KvLayerView& cache, const AttentionBatch& batch,
                          const AttentionDims& dims, float* out) {
  Dispatch(q, cache, batch, dims, out);
}

}  // namespace pagellm

#pragma GCC pop_options
