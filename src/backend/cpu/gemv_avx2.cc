// AVX2 + FMA + F16C GEMV (the baseline path). See gemv.h.
#include <immintrin.h>

#include <algorithm>

#include "backend/cpu/gemv.h"
#include "common/status.h"
#include "tensor/half.h"

namespace pagellm {
namespace {

struct Bf16Weights {
  using T = uint16_t;
  static __m256 Load8(const T* p) {
    __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
  static float Load1(const T* p) { return Bf16ToF32(*p); }
};
struct F16Weights {
  using T = uint16_t;
  static __m256 Load8(const T* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static float Load1(const T* p) { return F16ToF32(*p); }
};
struct F32Weights {
  using T = float;
  static __m256 Load8(const T* p) { return _mm256_loadu_ps(p); }
  static float Load1(const T* p) { return *p; }
};

inline float HorizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// NR weight rows starting at n0 against M rows of x: y[m, n0 + r].
template <typename W, int M, int NR>
void Block(const GemvArgs& a, const float* x, float* y, int64_t n0) {
  const int64_t k_dim = a.k;
  const auto* w = static_cast<const typename W::T*>(a.w) + n0 * k_dim;
  __m256 acc[NR][M];
  for (int r = 0; r < NR; ++r)
    for (int m = 0; m < M; ++m) acc[r][m] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 8 <= k_dim; k += 8) {
    __m256 xv[M];
    for (int m = 0; m < M; ++m) xv[m] = _mm256_loadu_ps(x + m * k_dim + k);
    for (int r = 0; r < NR; ++r) {
      __m256 wv = W::Load8(w + r * k_dim + k);
      for (int m = 0; m < M; ++m) acc[r][m] = _mm256_fmadd_ps(wv, xv[m], acc[r][m]);
    }
  }
  for (int r = 0; r < NR; ++r) {
    for (int m = 0; m < M; ++m) {
      float sum = HorizontalSum(acc[r][m]);
      for (int64_t kk = k; kk < k_dim; ++kk) sum += W::Load1(w + r * k_dim + kk) * x[m * k_dim + kk];
      if (a.bias != nullptr) sum += a.bias[n0 + r];
      y[m * a.n + n0 + r] = sum;
    }
  }
}

template <typename W, int M>
void Rows(const GemvArgs& a, const float* x, float* y, int64_t n_begin, int64_t n_end) {
  constexpr int kRowsPerBlock = M <= 2 ? 4 : 2;  // 16 ymm registers
  int64_t n = n_begin;
  for (; n + kRowsPerBlock <= n_end; n += kRowsPerBlock) Block<W, M, kRowsPerBlock>(a, x, y, n);
  for (; n < n_end; ++n) Block<W, M, 1>(a, x, y, n);
}

template <typename W>
void Run(const GemvArgs& a) {
  constexpr int64_t kChunk = 32;  // weight rows per OpenMP work item
  const int64_t num_chunks = (a.n + kChunk - 1) / kChunk;
  const int64_t grain = std::max<int64_t>(1, num_chunks / 64);
  for (int64_t m0 = 0; m0 < a.num_rows; m0 += 4) {
    const int rows = static_cast<int>(std::min<int64_t>(4, a.num_rows - m0));
    const float* x = a.x + m0 * a.k;
    float* y = a.y + m0 * a.n;
    // Dynamic, about 64 work items per call: a thread whose core is taken by another
    // process takes fewer items instead of holding up the barrier (static split: ~2x).
#pragma omp parallel for schedule(dynamic, grain)
    for (int64_t c = 0; c < num_chunks; ++c) {
      int64_t n_begin = c * kChunk, n_end = std::min(a.n, n_begin + kChunk);
      switch (rows) {
        case 1: Rows<W, 1>(a, x, y, n_begin, n_end); break;
        case 2: Rows<W, 2>(a, x, y, n_begin, n_end); break;
        case 3: Rows<W, 3>(a, x, y, n_begin, n_end); break;
        default: Rows<W, 4>(a, x, y, n_begin, n_end); break;
      }
    }
  }
}

}  // namespace

void GemvAvx2(const GemvArgs& args) {
  switch (args.w_dtype) {
    case DType::kBF16: Run<Bf16Weights>(args); return;
    case DType::kF16: Run<F16Weights>(args); return;
    case DType::kF32: Run<F32Weights>(args); return;
    default: PAGELLM_CHECK(false && "GemvAvx2: unsupported weight dtype");
  }
}

}  // namespace pagellm
