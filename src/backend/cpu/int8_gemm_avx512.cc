// AVX-512 VNNI pack and panel kernels of the Q8_0 GEMM (int8_gemm_kernels.h). Everything
// after the pragma is compiled for AVX-512 and only runs when CpuSupportsAvx512Vnni().
//
// Activations are stored as u8 = q + 128 (vpdpbusd wants one unsigned operand; AVX-512
// has no vpsignb for llama.cpp's sign trick), so each block's int32 accumulator starts at
// the packed -128 * sum(w) and ends at the exact signed dot.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/int8_gemm_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,f16c,fma")
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace pagellm::int8_gemm {
namespace {

constexpr int kTileRows = 6;  // activation rows per register tile (x 2 strips: 24 accumulators)

// One strip: 16 rows (those at or past n masked to zero) gathered 4 bytes at a time.
void PackStrip(const BlockQ8_0* w, int64_t n, int64_t nb, int64_t n0, uint8_t* dst) {
  const int64_t valid = std::min<int64_t>(kStripRows, n - n0);
  const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1u);
  const __m512i row_offset = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
      _mm512_set1_epi32(static_cast<int32_t>(nb * kQ8_0BlockBytes)));
  const __m512i ones = _mm512_set1_epi8(1), zero = _mm512_setzero_si512();
  for (int64_t b = 0; b < nb; ++b) {
    const auto* base = reinterpret_cast<const char*>(w + (n0 * nb + b));
    uint8_t* out = dst + b * kStripBlockBytes;
    __m512i sum = zero;
    for (int g = 0; g < kGroups; ++g) {
      const __m512i v = _mm512_mask_i32gather_epi32(zero, mask, row_offset, base + 2 + 4 * g, 1);
      _mm512_storeu_si512(out + g * 64, v);
      sum = _mm512_dpbusd_epi32(sum, ones, v);  // sum of each row's 4 signed bytes
    }
    const __m512i d_bits = _mm512_mask_i32gather_epi32(zero, mask, row_offset, base, 1);
    _mm512_storeu_ps(out + kDOffset, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(d_bits)));
    _mm512_storeu_si512(out + kCorrOffset, _mm512_sub_epi32(zero, _mm512_slli_epi32(sum, 7)));
  }
}

void Pack(const BlockQ8_0* w, int64_t n, int64_t nb, int64_t n0, int64_t num_strips, uint8_t* panel) {
  for (int64_t s = 0; s < num_strips; ++s) PackStrip(w, n, nb, n0 + s * kStripRows, panel + s * nb * kStripBlockBytes);
}

inline __m512i Broadcast4(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm512_set1_epi32(v);
}

// y rows m0 .. m0+MR-1, columns n0 .. n0 + 16*NS (masked at n_end) from NS strips.
template <int MR, int NS>
void Tile(const Acts& x, int64_t m0, const uint8_t* strip, int64_t strip_stride, int64_t n0, int64_t n_end,
          const float* bias, float* y) {
  __m512 acc[MR][NS];
  #pragma GCC unroll 8
  for (int m = 0; m < MR; ++m)
    #pragma GCC unroll 8
    for (int j = 0; j < NS; ++j) acc[m][j] = _mm512_setzero_ps();
  const uint8_t* xrow = x.q + m0 * x.k;
  const float* xd = x.d + m0 * x.nb;
  for (int64_t b = 0; b < x.nb; ++b) {
    const uint8_t* wb = strip + b * kStripBlockBytes;
    __m512i dot[MR][NS];
    #pragma GCC unroll 8
    for (int j = 0; j < NS; ++j) {
      const __m512i corr = _mm512_loadu_si512(wb + j * strip_stride + kCorrOffset);
      #pragma GCC unroll 8
      for (int m = 0; m < MR; ++m) dot[m][j] = corr;
    }
    const uint8_t* xb = xrow + b * kQ8_0BlockElements;
    #pragma GCC unroll 8
    for (int g = 0; g < kGroups; ++g) {
      __m512i wv[NS];
      #pragma GCC unroll 8
      for (int j = 0; j < NS; ++j) wv[j] = _mm512_loadu_si512(wb + j * strip_stride + g * 64);
      #pragma GCC unroll 8
      for (int m = 0; m < MR; ++m) {
        const __m512i xv = Broadcast4(xb + m * x.k + 4 * g);
        #pragma GCC unroll 8
        for (int j = 0; j < NS; ++j) dot[m][j] = _mm512_dpbusd_epi32(dot[m][j], xv, wv[j]);
      }
    }
    #pragma GCC unroll 8
    for (int j = 0; j < NS; ++j) {
      const __m512 dw = _mm512_loadu_ps(wb + j * strip_stride + kDOffset);
      #pragma GCC unroll 8
      for (int m = 0; m < MR; ++m) {
        const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(xd[m * x.nb + b]));
        acc[m][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[m][j]), scale, acc[m][j]);
      }
    }
  }
  #pragma GCC unroll 8
  for (int j = 0; j < NS; ++j) {
    const int64_t col = n0 + j * kStripRows;
    const int64_t valid = std::clamp<int64_t>(n_end - col, 0, kStripRows);
    const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1u);
    const __m512 bv = bias ? _mm512_maskz_loadu_ps(mask, bias + col) : _mm512_setzero_ps();
    #pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) _mm512_mask_storeu_ps(y + (m0 + m) * n_end + col, mask, _mm512_add_ps(acc[m][j], bv));
  }
}

// Rows m0 .. m0+MR-1 against every strip of the panel, two strips at a time.
template <int MR>
void TileRow(const Acts& x, int64_t m0, const uint8_t* panel, int64_t num_strips, int64_t n0, int64_t n_end,
             const float* bias, float* y) {
  const int64_t stride = x.nb * kStripBlockBytes;
  int64_t s = 0;
  for (; s + 2 <= num_strips; s += 2)
    Tile<MR, 2>(x, m0, panel + s * stride, stride, n0 + s * kStripRows, n_end, bias, y);
  if (s < num_strips) Tile<MR, 1>(x, m0, panel + s * stride, stride, n0 + s * kStripRows, n_end, bias, y);
}

void Panel(const Acts& x, const uint8_t* panel, int64_t num_strips, int64_t n0, int64_t n_end, const float* bias,
           float* y) {
  for (int64_t m0 = 0; m0 < x.num_rows; m0 += kTileRows) {
    switch (std::min<int64_t>(kTileRows, x.num_rows - m0)) {
      case 1: TileRow<1>(x, m0, panel, num_strips, n0, n_end, bias, y); break;
      case 2: TileRow<2>(x, m0, panel, num_strips, n0, n_end, bias, y); break;
      case 3: TileRow<3>(x, m0, panel, num_strips, n0, n_end, bias, y); break;
      case 4: TileRow<4>(x, m0, panel, num_strips, n0, n_end, bias, y); break;
      case 5: TileRow<5>(x, m0, panel, num_strips, n0, n_end, bias, y); break;
      default: TileRow<kTileRows>(x, m0, panel, num_strips, n0, n_end, bias, y); break;
    }
  }
}

}  // namespace

Q8_0GemmKernels Q8_0GemmKernelsAvx512() { return {.offset_acts = true, .pack = Pack, .panel = Panel}; }

}  // namespace pagellm::int8_gemm

#pragma GCC pop_options
