// AVX-512 (F/BW/VL/BF16) GEMV. Everything after the pragma is compiled for AVX-512 and
// must only run when CpuSupportsAvx512Bf16(); headers are included before it so no
// shared inline code is built with AVX-512 instructions. See gemv.h.
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "backend/cpu/gemv.h"
#include "common/status.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512bf16")
// GCC 12 reports false "uninitialized" warnings inside its own avx512fintrin.h reductions.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace pagellm {
namespace {

constexpr int kRowsPerBlock = 4;  // 4 weight rows x 4 x rows = 16 of 32 zmm accumulators

// ---- bf16 weights: vdpbf16ps on (x as bf16) x (w as bf16) pairs, fp32 accumulate.
// x_bf16 [M, k_padded] is zero-padded to a multiple of 32 so only w needs a mask.
template <int M, int NR>
void BlockBf16(const GemvArgs& a, const uint16_t* xb, int64_t k_padded, float* y, int64_t n0) {
  const int64_t k_dim = a.k;
  const uint16_t* w = static_cast<const uint16_t*>(a.w) + n0 * k_dim;
  __m512 acc[NR][M];
  for (int r = 0; r < NR; ++r)
    for (int m = 0; m < M; ++m) acc[r][m] = _mm512_setzero_ps();
  for (int64_t k = 0; k < k_dim; k += 32) {
    const __mmask32 mask = k + 32 <= k_dim ? ~__mmask32{0} : static_cast<__mmask32>((1ull << (k_dim - k)) - 1);
    __m512i xv[M];
    for (int m = 0; m < M; ++m) xv[m] = _mm512_loadu_si512(xb + m * k_padded + k);
    for (int r = 0; r < NR; ++r) {
      __m512i wv = _mm512_maskz_loadu_epi16(mask, w + r * k_dim + k);
      for (int m = 0; m < M; ++m) acc[r][m] = _mm512_dpbf16_ps(acc[r][m], (__m512bh)wv, (__m512bh)xv[m]);
    }
  }
  for (int r = 0; r < NR; ++r)
    for (int m = 0; m < M; ++m)
      y[m * a.n + n0 + r] = _mm512_reduce_add_ps(acc[r][m]) + (a.bias ? a.bias[n0 + r] : 0.0f);
}

// ---- f16 / f32 weights: widen to fp32, FMA with fp32 x; masked tail.
template <bool kF16>
inline __m512 LoadW16(const void* w, int64_t idx, __mmask16 mask) {
  if constexpr (kF16) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, static_cast<const uint16_t*>(w) + idx));
  } else {
    return _mm512_maskz_loadu_ps(mask, static_cast<const float*>(w) + idx);
  }
}

template <bool kF16, int M, int NR>
void BlockWide(const GemvArgs& a, const float* x, float* y, int64_t n0) {
  const int64_t k_dim = a.k;
  __m512 acc[NR][M];
  for (int r = 0; r < NR; ++r)
    for (int m = 0; m < M; ++m) acc[r][m] = _mm512_setzero_ps();
  for (int64_t k = 0; k < k_dim; k += 16) {
    const __mmask16 mask = k + 16 <= k_dim ? __mmask16{0xffff} : static_cast<__mmask16>((1u << (k_dim - k)) - 1);
    __m512 xv[M];
    for (int m = 0; m < M; ++m) xv[m] = _mm512_maskz_loadu_ps(mask, x + m * k_dim + k);
    for (int r = 0; r < NR; ++r) {
      __m512 wv = LoadW16<kF16>(a.w, (n0 + r) * k_dim + k, mask);
      for (int m = 0; m < M; ++m) acc[r][m] = _mm512_fmadd_ps(wv, xv[m], acc[r][m]);
    }
  }
  for (int r = 0; r < NR; ++r)
    for (int m = 0; m < M; ++m)
      y[m * a.n + n0 + r] = _mm512_reduce_add_ps(acc[r][m]) + (a.bias ? a.bias[n0 + r] : 0.0f);
}

// Kind: 0 = bf16, 1 = f16, 2 = f32.
template <int kKind, int M>
void Rows(const GemvArgs& a, const float* x, const uint16_t* xb, int64_t k_padded, float* y, int64_t n_begin,
          int64_t n_end) {
  int64_t n = n_begin;
  for (; n + kRowsPerBlock <= n_end; n += kRowsPerBlock) {
    if constexpr (kKind == 0) BlockBf16<M, kRowsPerBlock>(a, xb, k_padded, y, n);
    else BlockWide<kKind == 1, M, kRowsPerBlock>(a, x, y, n);
  }
  for (; n < n_end; ++n) {
    if constexpr (kKind == 0) BlockBf16<M, 1>(a, xb, k_padded, y, n);
    else BlockWide<kKind == 1, M, 1>(a, x, y, n);
  }
}

template <int kKind>
void Run(const GemvArgs& a) {
  constexpr int64_t kChunk = 32;
  const int64_t num_chunks = (a.n + kChunk - 1) / kChunk;
  const int64_t grain = std::max<int64_t>(1, num_chunks / 64);
  const int64_t k_padded = (a.k + 31) / 32 * 32;
  thread_local std::vector<uint16_t> x_bf16;  // grows once, reused across calls
  for (int64_t m0 = 0; m0 < a.num_rows; m0 += 4) {
    const int rows = static_cast<int>(std::min<int64_t>(4, a.num_rows - m0));
    const float* x = a.x + m0 * a.k;
    float* y = a.y + m0 * a.n;
    if constexpr (kKind == 0) {
      if (x_bf16.size() < static_cast<size_t>(4 * k_padded)) x_bf16.resize(static_cast<size_t>(4 * k_padded));
      ConvertRowsToBf16Avx512(x, rows, a.k, k_padded, x_bf16.data());
    }
    const uint16_t* xb = x_bf16.data();
    // Dynamic, about 64 work items per call: a thread whose core is taken by another
    // process takes fewer items instead of holding up the barrier (static split: ~2x).
#pragma omp parallel for schedule(dynamic, grain)
    for (int64_t c = 0; c < num_chunks; ++c) {
      int64_t n_begin = c * kChunk, n_end = std::min(a.n, n_begin + kChunk);
      switch (rows) {
        case 1: Rows<kKind, 1>(a, x, xb, k_padded, y, n_begin, n_end); break;
        case 2: Rows<kKind, 2>(a, x, xb, k_padded, y, n_begin, n_end); break;
        case 3: Rows<kKind, 3>(a, x, xb, k_padded, y, n_begin, n_end); break;
        default: Rows<kKind, 4>(a, x, xb, k_padded, y, n_begin, n_end); break;
      }
    }
  }
}

}  // namespace

void ConvertRowsToBf16Avx512(const float* x, int rows, int64_t k, int64_t k_padded, uint16_t* out) {
  for (int m = 0; m < rows; ++m) {
    for (int64_t i = 0; i < k_padded; i += 16) {
      const __mmask16 mask = i + 16 <= k ? __mmask16{0xffff}
                                         : (i >= k ? __mmask16{0} : static_cast<__mmask16>((1u << (k - i)) - 1));
      __m256bh h = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(mask, x + m * k + i));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + m * k_padded + i), (__m256i)h);
    }
  }
}

void GemvAvx512(const GemvArgs& args) {
  switch (args.w_dtype) {
    case DType::kBF16: Run<0>(args); return;
    case DType::kF16: Run<1>(args); return;
    case DType::kF32: Run<2>(args); return;
    default: PAGELLM_CHECK(false && "GemvAvx512: unsupported weight dtype");
  }
}

}  // namespace pagellm

#pragma GCC pop_options
