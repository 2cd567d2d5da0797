// AVX2 kernel of the packed Q8_0 linear (q8_0_packed.h), the baseline path.
//
// A ymm holds 4 columns of 8 weight rows (half a strip). The stored u8 weights go back
// to s8 (xor 0x80) and each product uses llama.cpp's sign trick: |w| (u8, <= 128) times
// sign(x, w) (s8, |x| <= 127) in vpmaddubsw, whose int16 pair sums (<= 32512) cannot
// saturate, widened by vpmaddwd: exact int32 block dots without the +128 correction.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/q8_0_packed_kernels.h"

namespace pagellm::q8_0_packed {
namespace {

constexpr int kMaxTileRows = 2;  // activation rows per register tile

inline __m256i Broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm256_set1_epi32(v);
}

// y rows m0 .. m0+MR-1, NH half strips (8 weight rows each) from strip s0 on.
template <int MR, int NH>
void Tile(const PackedActs& x, const Q8_0PackedWeight& w, int64_t m0, int64_t s0, const float* bias, float* y) {
  const int64_t nb = x.nb, qs_stride = nb * kQ8_0PackQsBytes, d_stride = nb * kQ8_0PackRows;
  const uint8_t* qs = w.qs.get() + s0 * qs_stride;
  const uint16_t* ds = w.d.get() + s0 * d_stride;
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80)), ones = _mm256_set1_epi16(1);
  __m256 acc[MR][NH];
  #pragma GCC unroll 8
  for (int m = 0; m < MR; ++m)
    #pragma GCC unroll 8
    for (int h = 0; h < NH; ++h) acc[m][h] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const int8_t* xb = x.q + m0 * x.k + b * kQ8_0BlockElements;
    __m256i dot[MR][NH];
    #pragma GCC unroll 8
    for (int m = 0; m < MR; ++m)
      #pragma GCC unroll 8
      for (int h = 0; h < NH; ++h) dot[m][h] = _mm256_setzero_si256();
    #pragma GCC unroll 8
    for (int g = 0; g < 8; ++g) {
      __m256i xv[MR];
      #pragma GCC unroll 8
      for (int m = 0; m < MR; ++m) xv[m] = Broadcast4(xb + m * x.k + 4 * g);
      #pragma GCC unroll 8
      for (int h = 0; h < NH; ++h) {
        const uint8_t* p = qs + (h / 2) * qs_stride + b * kQ8_0PackQsBytes + g * 64 + (h % 2) * 32;
        const __m256i ws = _mm256_xor_si256(_mm256_load_si256(reinterpret_cast<const __m256i*>(p)), flip);
        const __m256i aw = _mm256_abs_epi8(ws);
        #pragma GCC unroll 8
        for (int m = 0; m < MR; ++m) {
          const __m256i prod = _mm256_maddubs_epi16(aw, _mm256_sign_epi8(xv[m], ws));
          dot[m][h] = _mm256_add_epi32(dot[m][h], _mm256_madd_epi16(prod, ones));
        }
      }
    }
    #pragma GCC unroll 8
    for (int h = 0; h < NH; ++h) {
      const auto* dp = reinterpret_cast<const __m128i*>(ds + (h / 2) * d_stride + b * kQ8_0PackRows + (h % 2) * 8);
      const __m256 dw = _mm256_cvtph_ps(_mm_load_si128(dp));
      #pragma GCC unroll 8
      for (int m = 0; m < MR; ++m) {
        const __m256 scale = _mm256_mul_ps(dw, _mm256_set1_ps(x.d[(m0 + m) * nb + b]));
        acc[m][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[m][h]), scale, acc[m][h]);
      }
    }
  }
  #pragma GCC unroll 8
  for (int h = 0; h < NH; ++h) {
    const int64_t col = s0 * kQ8_0PackRows + h * 8;
    const int64_t valid = std::clamp<int64_t>(w.n - col, 0, 8);
    #pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      float out[8];
      _mm256_storeu_ps(out, acc[m][h]);
      float* y_row = y + (m0 + m) * x.ldy + (col - x.col0);
      for (int64_t r = 0; r < valid; ++r) y_row[r] = out[r] + (bias ? bias[col + r] : 0.0f);
    }
  }
}

// Rows m0 .. m0+MR-1 against strips [s_begin, s_end): 2 strips per tile for one row, else 1.
template <int MR>
void TileRow(const PackedActs& x, const Q8_0PackedWeight& w, int64_t m0, int64_t s_begin, int64_t s_end,
             const float* bias, float* y) {
  constexpr int kNs = MR == 1 ? 2 : 1;
  int64_t s = s_begin;
  for (; s + kNs <= s_end; s += kNs) Tile<MR, 2 * kNs>(x, w, m0, s, bias, y);
  for (; s < s_end; ++s) Tile<MR, 2>(x, w, m0, s, bias, y);
}

}  // namespace

void StripsAvx2(const PackedActs& x, const Q8_0PackedWeight& w, int64_t s_begin, int64_t s_end, const float* bias,
                float* y) {
  for (int64_t m0 = 0; m0 < x.num_rows; m0 += kMaxTileRows) {
    if (x.num_rows - m0 >= 2) {
      TileRow<2>(x, w, m0, s_begin, s_end, bias, y);
    } else {
      TileRow<1>(x, w, m0, s_begin, s_end, bias, y);
    }
  }
}

}  // namespace pagellm::q8_0_packed
