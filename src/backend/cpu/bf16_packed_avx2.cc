// AVX2 kernel of the packed bf16 linear (bf16_packed.h), the baseline path.
//
// A strip's column pair is two ymm loads (rows 0-7 and 8-15), each lane one row's
// (even, odd) bf16 pair. A shift left by 16 widens the even element to fp32 and a mask
// of the high half the odd one; two FMAs against broadcast fp32 activations add them, the
// odd first (the order of vdpbf16ps and of the reference). 16 ymm registers: up to 8
// accumulators per tile, MR rows x NS strips x 2 halves.
#include <immintrin.h>

#include <algorithm>

#include "backend/cpu/bf16_packed_kernels.h"

namespace pagellm::bf16_packed {
namespace {

constexpr int kGemmTileRows = 4;        // MR of the GEMM (x 1 strip x 2 halves: 8 accumulators)
constexpr int64_t kPrefetchPairs = 32;  // 2 KB ahead in each strip, as the AVX-512 kernel

template <int MR, int NS>
void Tile(const Bf16PackedWeight& w, const Acts& x, int64_t m0, int64_t s0, const float* bias, float* y) {
  const int64_t stride = w.strip_stride(), num_pairs = w.num_pairs, x_stride = 2 * x.stride;
  const uint16_t* ws = w.data.get() + s0 * stride;
  const float* xs = x.values + m0 * x_stride;
  const __m256i high = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  __m256 acc[MR][NS][2];
  #pragma GCC unroll 8
  for (int m = 0; m < MR; ++m)
    #pragma GCC unroll 8
    for (int j = 0; j < NS; ++j) acc[m][j][0] = acc[m][j][1] = _mm256_setzero_ps();
  for (int64_t p = 0; p < num_pairs; ++p) {
    __m256 even[NS][2], odd[NS][2];
    #pragma GCC unroll 8
    for (int j = 0; j < NS; ++j) {
      const uint16_t* wp = ws + j * stride + p * 2 * kBf16PackRows;
      _mm_prefetch(reinterpret_cast<const char*>(wp + kPrefetchPairs * 2 * kBf16PackRows), _MM_HINT_T0);
      #pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(wp + h * 16));
        even[j][h] = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
        odd[j][h] = _mm256_castsi256_ps(_mm256_and_si256(v, high));
      }
    }
    #pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      const __m256 x_even = _mm256_broadcast_ss(xs + m * x_stride + 2 * p);
      const __m256 x_odd = _mm256_broadcast_ss(xs + m * x_stride + 2 * p + 1);
      #pragma GCC unroll 8
      for (int j = 0; j < NS; ++j) {
        #pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
          acc[m][j][h] = _mm256_fmadd_ps(odd[j][h], x_odd, acc[m][j][h]);
          acc[m][j][h] = _mm256_fmadd_ps(even[j][h], x_even, acc[m][j][h]);
        }
      }
    }
  }
  #pragma GCC unroll 8
  for (int j = 0; j < NS; ++j) {
    #pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const int64_t col = (s0 + j) * kBf16PackRows + h * 8;
      const int64_t valid = std::clamp<int64_t>(w.n - col, 0, 8);
      alignas(32) float out[8];
      #pragma GCC unroll 8
      for (int m = 0; m < MR; ++m) {
        _mm256_store_ps(out, acc[m][j][h]);
        float* yr = y + (m0 + m) * w.n + col;
        for (int64_t i = 0; i < valid; ++i) yr[i] = out[i] + (bias != nullptr ? bias[col + i] : 0.0f);
      }
    }
  }
}

// Rows m0 .. m0+MR-1 over strips [s_begin, s_end): NS = 2 strips per tile when MR <= 2
// (the GEMV: more independent accumulators per weight byte), else 1.
template <int MR>
void Strips(const Bf16PackedWeight& w, const Acts& x, int64_t m0, int64_t s_begin, int64_t s_end, const float* bias,
            float* y) {
  int64_t s = s_begin;
  if constexpr (MR <= 2) {
    for (; s + 2 <= s_end; s += 2) Tile<MR, 2>(w, x, m0, s, bias, y);
  }
  for (; s < s_end; ++s) Tile<MR, 1>(w, x, m0, s, bias, y);
}

}  // namespace

void RowsAvx2(const Acts& x, const Bf16PackedWeight& w, int64_t m_begin, int64_t m_end, int64_t s_begin,
              int64_t s_end, const float* bias, float* y) {
  for (int64_t m0 = m_begin; m0 < m_end; m0 += kGemmTileRows) {
    switch (std::min<int64_t>(kGemmTileRows, m_end - m0)) {
      case 1: Strips<1>(w, x, m0, s_begin, s_end, bias, y); break;
      case 2: Strips<2>(w, x, m0, s_begin, s_end, bias, y); break;
      case 3: Strips<3>(w, x, m0, s_begin, s_end, bias, y); break;
      default: Strips<4>(w, x, m0, s_begin, s_end, bias, y); break;
    }
  }
}

}  // namespace pagellm::bf16_packed
