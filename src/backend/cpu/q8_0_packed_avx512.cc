// AVX-512 VNNI kernel of the packed Q8_0 linear (q8_0_packed.h). Everything after the
// pragma is compiled for AVX-512 and only runs when CpuSupportsAvx512Vnni().
//
// Per 32-column block and strip of 16 weight rows: 8 zmm loads of u8 weights (w + 128),
// each dotted by vpdpbusd with a broadcast of 4 signed activation bytes into one int32
// lane per weight row, starting from -128 * sum(x) so the block dot is exact; then
// fp32 fma with the 16 widened fp16 weight scales times the activation scale. (The
// activations' quantizer is q8_0_packed_quant_avx512.cc.)
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/q8_0_packed_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,f16c,fma")
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace pagellm::q8_0_packed {
namespace {

constexpr int kMaxTileRows = 6;  // activation rows per register tile (x 2 strips: 24 accumulators)

// Strips per group: the activation rows all pass over one group (4 x nb x 544 bytes, <=
// 210 KB at K = 3072, stays in L2) before the next; see StripsAvx512.
constexpr int64_t kGroup = 4;

inline __m512i Broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm512_set1_epi32(v);
}

// y rows m0 .. m0+MR-1, weight rows of strips s0 .. s0+NS-1 (masked at w.n). kPrefetch:
// also strips s0 + kGroup .. (the next group's weights, same offsets). A template
// argument, not a run-time check: the check in the inner loop cost the M = 512 kernel ~4%.
template <int MR, int NS, bool kPrefetch>
void Tile(const PackedActs& x, const Q8_0PackedWeight& w, int64_t m0, int64_t s0, const float* bias, float* y) {
  const int64_t nb = x.nb, qs_stride = nb * kQ8_0PackQsBytes, d_stride = nb * kQ8_0PackRows;
  const uint8_t* qs = w.qs.get() + s0 * qs_stride;
  const uint16_t* ds = w.d.get() + s0 * d_stride;
  __m512 acc[MR][NS];
  #pragma GCC unroll 8
  for (int m = 0; m < MR; ++m)
    #pragma GCC unroll 8
    for (int j = 0; j < NS; ++j) acc[m][j] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* wb = qs + b * kQ8_0PackQsBytes;
    const int8_t* xb = x.q + m0 * x.k + b * kQ8_0BlockElements;
    __m512i dot[MR][NS];
    #pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      const __m512i corr = _mm512_set1_epi32(x.corr[(m0 + m) * nb + b]);
      #pragma GCC unroll 8
      for (int j = 0; j < NS; ++j) dot[m][j] = corr;
    }
    #pragma GCC unroll 8
    for (int g = 0; g < 8; ++g) {
      __m512i wv[NS];
      #pragma GCC unroll 8
      for (int j = 0; j < NS; ++j) wv[j] = _mm512_load_si512(wb + j * qs_stride + g * 64);
      if constexpr (kPrefetch) {  // the same bytes of the next group's strips
        #pragma GCC unroll 8
        for (int j = 0; j < NS; ++j) {
          _mm_prefetch(reinterpret_cast<const char*>(wb + (j + kGroup) * qs_stride + g * 64), _MM_HINT_T0);
        }
      }
      #pragma GCC unroll 8
      for (int m = 0; m < MR; ++m) {
        const __m512i xv = Broadcast4(xb + m * x.k + 4 * g);
        #pragma GCC unroll 8
        for (int j = 0; j < NS; ++j) dot[m][j] = _mm512_dpbusd_epi32(dot[m][j], wv[j], xv);
      }
    }
    #pragma GCC unroll 8
    for (int j = 0; j < NS; ++j) {
      const __m512 dw = _mm512_cvtph_ps(
          _mm256_load_si256(reinterpret_cast<const __m256i*>(ds + j * d_stride + b * kQ8_0PackRows)));
      #pragma GCC unroll 8
      for (int m = 0; m < MR; ++m) {
        const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(x.d[(m0 + m) * nb + b]));
        acc[m][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[m][j]), scale, acc[m][j]);
      }
    }
  }
  #pragma GCC unroll 8
  for (int j = 0; j < NS; ++j) {
    const int64_t col = (s0 + j) * kQ8_0PackRows;
    const int64_t valid = std::clamp<int64_t>(w.n - col, 0, kQ8_0PackRows);
    const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1u);
    const __m512 bv = bias ? _mm512_maskz_loadu_ps(mask, bias + col) : _mm512_setzero_ps();
    #pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) _mm512_mask_storeu_ps(y + (m0 + m) * x.ldy + (col - x.col0), mask, _mm512_add_ps(acc[m][j], bv));
  }
}

// Rows m0 .. m0+MR-1 against strips [s_begin, s_end): 4 strips per tile for MR <= 2
// (more loads in flight for the memory-bound GEMV), else 2 (registers).
template <int MR>
void TileRow(const PackedActs& x, const Q8_0PackedWeight& w, int64_t m0, int64_t s_begin, int64_t s_end,
             const float* bias, float* y, int64_t pf_end) {
  constexpr int kNs = MR <= 2 ? 4 : 2;
  int64_t s = s_begin;
  for (; s + kNs <= s_end; s += kNs) {
    if (s + kNs - 1 + kGroup < pf_end) Tile<MR, kNs, true>(x, w, m0, s, bias, y);
    else Tile<MR, kNs, false>(x, w, m0, s, bias, y);
  }
  for (; s < s_end; ++s) Tile<MR, 1, false>(x, w, m0, s, bias, y);
}

// All rows against strips [s_begin, s_end) (one group); the first row tile prefetches the
// next group's weights up to strip pf_end (0: none).
void Group(const PackedActs& x, const Q8_0PackedWeight& w, int64_t s_begin, int64_t s_end, const float* bias,
           float* y, int64_t pf_end) {
  for (int64_t m0 = 0; m0 < x.num_rows; m0 += kMaxTileRows) {
    const int64_t pf = m0 == 0 ? pf_end : 0;
    switch (std::min<int64_t>(kMaxTileRows, x.num_rows - m0)) {
      case 1: TileRow<1>(x, w, m0, s_begin, s_end, bias, y, pf); break;
      case 2: TileRow<2>(x, w, m0, s_begin, s_end, bias, y, pf); break;
      case 3: TileRow<3>(x, w, m0, s_begin, s_end, bias, y, pf); break;
      case 4: TileRow<4>(x, w, m0, s_begin, s_end, bias, y, pf); break;
      case 5: TileRow<5>(x, w, m0, s_begin, s_end, bias, y, pf); break;
      default: TileRow<kMaxTileRows>(x, w, m0, s_begin, s_end, bias, y, pf); break;
    }
  }
}

}  // namespace

// Group by group. The GEMM (M > 4) prefetches the next group while its first row tile
// runs: that tile waits on DRAM and the later ones find their weights in L2 and leave the
// memory idle, so without it a GEMM at M = 16 streams its weights at roughly half the
// GEMV's rate (kernel alone, one thread, cold, 1024 x 3072: 0.365 -> 0.319 ms). The
// GEMV (one row tile, already streaming) does not. (With 2 threads sharing the memory
// the gain was within noise; see kGemmStripsPerItem in q8_0_packed.cc.)
void StripsAvx512(const PackedActs& x, const Q8_0PackedWeight& w, int64_t s_begin, int64_t s_end,
                  const float* bias, float* y) {
  const int64_t pf_end = x.num_rows <= 4 ? 0 : s_end;
  for (int64_t g = s_begin; g < s_end; g += kGroup) Group(x, w, g, std::min(s_end, g + kGroup), bias, y, pf_end);
}

}  // namespace pagellm::q8_0_packed

#pragma GCC pop_options
