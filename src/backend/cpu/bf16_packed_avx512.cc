// AVX-512 BF16 kernel of the packed bf16 linear (bf16_packed.h). Everything after the
// pragma is compiled for AVX-512 and only runs when CpuSupportsAvx512Bf16().
//
// Register tile: MR activation rows x NS strips of 16 weight rows, MR * NS zmm
// accumulators (one output per lane). Per column pair: NS aligned 64-byte weight loads,
// MR broadcasts of an activation pair, MR * NS vdpbf16ps.
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "backend/cpu/bf16_packed_kernels.h"
#include "backend/cpu/gemv.h"
#include "common/parallel_for.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512bf16")
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace pagellm::bf16_packed {
namespace {

constexpr int kGemmTileRows = 6;      // MR of the GEMM (x 4 strips: 24 accumulators)
constexpr int64_t kTileStrips = 4;    // NS
constexpr int64_t kPrefetchPairs = 32;  // GEMV: 2 KB ahead in each strip (hardware prefetch alone: ~20 % slower)

// y rows m0 .. m0+MR-1, columns of strips s0 .. s0+NS-1 (masked at w.n).
template <int MR, int NS>
void Tile(const Bf16PackedWeight& w, const Acts& x, int64_t m0, int64_t s0, const float* bias, float* y) {
  const int64_t stride = w.strip_stride(), num_pairs = w.num_pairs;
  const uint16_t* ws = w.data.get() + s0 * stride;
  const uint32_t* xs = x.pairs + m0 * x.stride;
  __m512 acc[MR][NS];
  #pragma GCC unroll 8
  for (int m = 0; m < MR; ++m)
    #pragma GCC unroll 8
    for (int j = 0; j < NS; ++j) acc[m][j] = _mm512_setzero_ps();
  for (int64_t p = 0; p < num_pairs; ++p) {
    __m512i wv[NS];
    #pragma GCC unroll 8
    for (int j = 0; j < NS; ++j) wv[j] = _mm512_load_si512(ws + j * stride + p * 2 * kBf16PackRows);
    // At every MR: without it 5 rows streamed the 311 MB lm_head 1.4x slower than 1 to 4
    // rows (Zen 5: 9.3-9.8 vs 6.5-7.5 ms), which made a 4-draft verification step costly.
    #pragma GCC unroll 8
    for (int j = 0; j < NS; ++j) {
      _mm_prefetch(reinterpret_cast<const char*>(ws + j * stride + (p + kPrefetchPairs) * 2 * kBf16PackRows),
                   _MM_HINT_T0);
    }
    #pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      const __m512bh xv = (__m512bh)_mm512_set1_epi32(static_cast<int>(xs[m * x.stride + p]));
      #pragma GCC unroll 8
      for (int j = 0; j < NS; ++j) acc[m][j] = _mm512_dpbf16_ps(acc[m][j], (__m512bh)wv[j], xv);
    }
  }
  #pragma GCC unroll 8
  for (int j = 0; j < NS; ++j) {
    const int64_t col = (s0 + j) * kBf16PackRows;
    const int64_t valid = std::clamp<int64_t>(w.n - col, 0, kBf16PackRows);
    const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1u);
    const __m512 bv = bias ? _mm512_maskz_loadu_ps(mask, bias + col) : _mm512_setzero_ps();
    #pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) _mm512_mask_storeu_ps(y + (m0 + m) * w.n + col, mask, _mm512_add_ps(acc[m][j], bv));
  }
}

// Rows m0 .. m0+MR-1 over strips [s_begin, s_end): NS-strip tiles, then the remainder.
template <int MR>
void Strips(const Bf16PackedWeight& w, const Acts& x, int64_t m0, int64_t s_begin, int64_t s_end, const float* bias,
            float* y) {
  int64_t s = s_begin;
  for (; s + kTileStrips <= s_end; s += kTileStrips) Tile<MR, kTileStrips>(w, x, m0, s, bias, y);
  switch (s_end - s) {
    case 1: Tile<MR, 1>(w, x, m0, s, bias, y); break;
    case 2: Tile<MR, 2>(w, x, m0, s, bias, y); break;
    case 3: Tile<MR, 3>(w, x, m0, s, bias, y); break;
    default: break;
  }
}

}  // namespace

void RowsAvx512(const Acts& x, const Bf16PackedWeight& w, int64_t m_begin, int64_t m_end, int64_t s_begin,
                int64_t s_end, const float* bias, float* y) {
  for (int64_t m0 = m_begin; m0 < m_end; m0 += kGemmTileRows) {
    switch (std::min<int64_t>(kGemmTileRows, m_end - m0)) {
      case 1: Strips<1>(w, x, m0, s_begin, s_end, bias, y); break;
      case 2: Strips<2>(w, x, m0, s_begin, s_end, bias, y); break;
      case 3: Strips<3>(w, x, m0, s_begin, s_end, bias, y); break;
      case 4: Strips<4>(w, x, m0, s_begin, s_end, bias, y); break;
      case 5: Strips<5>(w, x, m0, s_begin, s_end, bias, y); break;
      default: Strips<6>(w, x, m0, s_begin, s_end, bias, y); break;
    }
  }
}

void ConvertActsAvx512(const float* x, int64_t rows, int64_t k, int64_t stride, uint16_t* out) {
  // Few rows: a wake-up of the other threads costs more than the work.
  ParallelFor(rows, rows * k > 65536,
              [&](int64_t m) { ConvertRowsToBf16Avx512(x + m * k, 1, k, 2 * stride, out + m * 2 * stride); });
}

}  // namespace pagellm::bf16_packed

#pragma GCC pop_options
