// AVX-512 VNNI int8 kernels. Everything after the pragma is compiled for AVX-512 and
// must only run when CpuSupportsAvx512Vnni(). See int8_gemv.h.
#include <immintrin.h>

#include <algorithm>

#include "backend/cpu/int8_gemv.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,f16c")
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace pagellm {
namespace {

constexpr int64_t kChunk = 32;      // weight rows per OpenMP work item
constexpr int kRowsPerBlock = 4;    // weight rows per inner block (32 vector registers)

inline float HorizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Q8_0: one block (32 int8) per ymm; |x| (u8) x sign(w, x) (s8) into vpdpbusd, which
// sums 4 products per int32 lane without the int16 saturation of vpmaddubsw.
template <int M, int NR>
void TileQ8_0(const Q8_0GemvArgs& a, int64_t m0, int64_t n0) {
  const int64_t nb = a.k / kQ8_0BlockElements;
  __m256 acc[NR][M];
  #pragma GCC unroll 8
  for (int r = 0; r < NR; ++r)
    #pragma GCC unroll 8
    for (int m = 0; m < M; ++m) acc[r][m] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    __m256i xv[M], ax[M];
    __m256 dx[M];
    #pragma GCC unroll 8
    for (int m = 0; m < M; ++m) {
      xv[m] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.x[(m0 + m) * nb + b].qs));
      ax[m] = _mm256_abs_epi8(xv[m]);
      dx[m] = _mm256_set1_ps(a.x_d[(m0 + m) * nb + b]);
    }
    #pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) {
      const BlockQ8_0& wb = a.w[(n0 + r) * nb + b];
      const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.qs));
      const __m256 dw = _mm256_set1_ps(_cvtsh_ss(wb.d));
      #pragma GCC unroll 8
      for (int m = 0; m < M; ++m) {
        const __m256i dot = _mm256_dpbusd_epi32(_mm256_setzero_si256(), ax[m], _mm256_sign_epi8(wv, xv[m]));
        acc[r][m] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(dot), dx[m]), dw, acc[r][m]);
      }
    }
  }
  #pragma GCC unroll 8
  for (int r = 0; r < NR; ++r)
    #pragma GCC unroll 8
    for (int m = 0; m < M; ++m)
      a.y[(m0 + m) * a.n + n0 + r] = HorizontalSum(acc[r][m]) + (a.bias ? a.bias[n0 + r] : 0.0f);
}

// W8A8: 64 int8 per zmm; x ^ 0x80 = x + 128 as u8, corrected by 128 * w_sum at the end.
template <int M, int NR>
void TileW8A8(const W8A8GemvArgs& a, int64_t m0, int64_t n0) {
  const int64_t kp = a.k_padded;
  const __m512i offset = _mm512_set1_epi8(static_cast<char>(0x80));
  __m512i acc[NR][M];
  for (int r = 0; r < NR; ++r)
    for (int m = 0; m < M; ++m) acc[r][m] = _mm512_setzero_si512();
  for (int64_t k = 0; k < kp; k += 64) {
    __m512i xu[M];
    for (int m = 0; m < M; ++m) xu[m] = _mm512_xor_si512(_mm512_loadu_si512(a.x + (m0 + m) * kp + k), offset);
    for (int r = 0; r < NR; ++r) {
      const __m512i wv = _mm512_loadu_si512(a.w + (n0 + r) * kp + k);
      for (int m = 0; m < M; ++m) acc[r][m] = _mm512_dpbusd_epi32(acc[r][m], xu[m], wv);
    }
  }
  for (int r = 0; r < NR; ++r) {
    for (int m = 0; m < M; ++m) {
      const int32_t dot = _mm512_reduce_add_epi32(acc[r][m]) - 128 * a.w_sum[n0 + r];
      a.y[(m0 + m) * a.n + n0 + r] = static_cast<float>(dot) * (a.x_scale[m0 + m] * a.w_scale[n0 + r]) +
                                     (a.bias ? a.bias[n0 + r] : 0.0f);
    }
  }
}

template <int M, int NR>
struct Q8_0Kernel {
  static void Run(const Q8_0GemvArgs& a, int64_t m0, int64_t n0) { TileQ8_0<M, NR>(a, m0, n0); }
};
template <int M, int NR>
struct W8A8Kernel {
  static void Run(const W8A8GemvArgs& a, int64_t m0, int64_t n0) { TileW8A8<M, NR>(a, m0, n0); }
};

// Weight rows [n_begin, n_end) against all M rows of x, 4 rows of x at a time.
template <typename Args, template <int, int> class Kernel, int M>
void Rows(const Args& a, int64_t m0, int64_t n_begin, int64_t n_end) {
  int64_t n = n_begin;
  for (; n + kRowsPerBlock <= n_end; n += kRowsPerBlock) Kernel<M, kRowsPerBlock>::Run(a, m0, n);
  for (; n < n_end; ++n) Kernel<M, 1>::Run(a, m0, n);
}

template <typename Args, template <int, int> class Kernel>
void RunChunks(const Args& a) {
  const int64_t num_chunks = (a.n + kChunk - 1) / kChunk;
  // Dynamic, about 64 work items per call: a thread whose core is taken by another
  // process takes fewer items instead of holding up the barrier (static split: ~2x).
  const int64_t grain = std::max<int64_t>(1, num_chunks / 64);
#pragma omp parallel for schedule(dynamic, grain)
  for (int64_t c = 0; c < num_chunks; ++c) {
    const int64_t n_begin = c * kChunk, n_end = std::min(a.n, (c + 1) * kChunk);
    for (int64_t m0 = 0; m0 < a.num_rows; m0 += 4) {
      switch (std::min<int64_t>(4, a.num_rows - m0)) {
        case 1: Rows<Args, Kernel, 1>(a, m0, n_begin, n_end); break;
        case 2: Rows<Args, Kernel, 2>(a, m0, n_begin, n_end); break;
        case 3: Rows<Args, Kernel, 3>(a, m0, n_begin, n_end); break;
        default: Rows<Args, Kernel, 4>(a, m0, n_begin, n_end); break;
      }
    }
  }
}

}  // namespace

void GemvQ8_0Avx512(const Q8_0GemvArgs& args) { RunChunks<Q8_0GemvArgs, Q8_0Kernel>(args); }
void GemvW8A8Avx512(const W8A8GemvArgs& args) { RunChunks<W8A8GemvArgs, W8A8Kernel>(args); }

}  // namespace pagellm

#pragma GCC pop_options
