// AVX2 int8 kernels (the baseline path). See int8_gemv.h.
#include <immintrin.h>

#include <algorithm>

#include "backend/cpu/int8_gemv.h"

namespace pagellm {
namespace {

constexpr int64_t kChunk = 32;  // weight rows per OpenMP work item

inline float HorizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline int32_t HorizontalSum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

// 8 int32 partial dots of 32 int8 pairs: |x| (u8) times sign(w, x) (s8), as llama.cpp's
// mul_sum_i8_pairs. |x|, |w| <= 127 keeps vpmaddubsw's int16 pair sums from saturating.
inline __m256i DotI8(__m256i abs_x, __m256i x, __m256i w) {
  const __m256i pairs = _mm256_maddubs_epi16(abs_x, _mm256_sign_epi8(w, x));
  return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

template <int M, int NR>
void TileQ8_0(const Q8_0GemvArgs& a, int64_t m0, int64_t n0) {
  const int64_t nb = a.k / kQ8_0BlockElements;
  __m256 acc[NR][M];
  for (int r = 0; r < NR; ++r)
    for (int m = 0; m < M; ++m) acc[r][m] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    __m256i xv[M], ax[M];
    __m256 dx[M];
    for (int m = 0; m < M; ++m) {
      xv[m] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.x[(m0 + m) * nb + b].qs));
      ax[m] = _mm256_sign_epi8(xv[m], xv[m]);
      dx[m] = _mm256_set1_ps(a.x_d[(m0 + m) * nb + b]);
    }
    for (int r = 0; r < NR; ++r) {
      const BlockQ8_0& wb = a.w[(n0 + r) * nb + b];
      const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.qs));
      const __m256 dw = _mm256_set1_ps(_cvtsh_ss(wb.d));
      for (int m = 0; m < M; ++m) {
        __m256 dot = _mm256_mul_ps(_mm256_cvtepi32_ps(DotI8(ax[m], xv[m], wv)), dx[m]);
        acc[r][m] = _mm256_fmadd_ps(dot, dw, acc[r][m]);
      }
    }
  }
  for (int r = 0; r < NR; ++r)
    for (int m = 0; m < M; ++m)
      a.y[(m0 + m) * a.n + n0 + r] = HorizontalSum(acc[r][m]) + (a.bias ? a.bias[n0 + r] : 0.0f);
}

template <int M, int NR>
void TileW8A8(const W8A8GemvArgs& a, int64_t m0, int64_t n0) {
  const int64_t kp = a.k_padded;
  __m256i acc[NR][M];
  for (int r = 0; r < NR; ++r)
    for (int m = 0; m < M; ++m) acc[r][m] = _mm256_setzero_si256();
  for (int64_t k = 0; k < kp; k += 32) {
    __m256i xv[M], ax[M];
    for (int m = 0; m < M; ++m) {
      xv[m] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.x + (m0 + m) * kp + k));
      ax[m] = _mm256_sign_epi8(xv[m], xv[m]);
    }
    for (int r = 0; r < NR; ++r) {
      const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.w + (n0 + r) * kp + k));
      for (int m = 0; m < M; ++m) acc[r][m] = _mm256_add_epi32(acc[r][m], DotI8(ax[m], xv[m], wv));
    }
  }
  for (int r = 0; r < NR; ++r) {
    for (int m = 0; m < M; ++m) {
      const float dot = static_cast<float>(HorizontalSum(acc[r][m]));
      a.y[(m0 + m) * a.n + n0 + r] =
          dot * (a.x_scale[m0 + m] * a.w_scale[n0 + r]) + (a.bias ? a.bias[n0 + r] : 0.0f);
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

// Weight rows [n_begin, n_end) against rows m0 .. m0 + M - 1 of x.
template <typename Args, template <int, int> class Kernel, int M>
void Rows(const Args& a, int64_t m0, int64_t n_begin, int64_t n_end) {
  constexpr int kRowsPerBlock = M <= 2 ? 4 : 2;  // 16 ymm registers
  int64_t n = n_begin;
  for (; n + kRowsPerBlock <= n_end; n += kRowsPerBlock) Kernel<M, kRowsPerBlock>::Run(a, m0, n);
  for (; n < n_end; ++n) Kernel<M, 1>::Run(a, m0, n);
}

// Each chunk of weight rows loops over all M rows of x (4 at a time) while it is hot.
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

void GemvQ8_0Avx2(const Q8_0GemvArgs& args) { RunChunks<Q8_0GemvArgs, Q8_0Kernel>(args); }
void GemvW8A8Avx2(const W8A8GemvArgs& args) { RunChunks<W8A8GemvArgs, W8A8Kernel>(args); }

bool CpuSupportsAvx512Vnni() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
}

}  // namespace pagellm
