// AVX2 pack and panel kernels of the Q8_0 GEMM (int8_gemm_kernels.h), the baseline path.
//
// Activations stay signed; each product uses llama.cpp's sign trick: |x| (u8) times
// sign(w, x) (s8) in vpmaddubsw (|x|, |w| <= 127, so the int16 pair sums cannot
// saturate), widened by vpmaddwd. The packed corr field is not used here.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/int8_gemm_kernels.h"
#include "tensor/half.h"

namespace pagellm::int8_gemm {
namespace {

constexpr int kTileRows = 2;  // activation rows per register tile (x 16 weight rows)

// One strip: rows (8 per gather, those at or past n masked to zero), 4 bytes at a time.
void PackStrip(const BlockQ8_0* w, int64_t n, int64_t nb, int64_t n0, uint8_t* dst) {
  const int64_t valid = std::min<int64_t>(kStripRows, n - n0);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i mask_lo = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(valid)), lane);
  const __m256i mask_hi = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(valid - 8)), lane);
  const auto row_bytes = static_cast<int32_t>(nb * kQ8_0BlockBytes);
  const __m256i offset_lo = _mm256_mullo_epi32(lane, _mm256_set1_epi32(row_bytes));
  const __m256i offset_hi = _mm256_add_epi32(offset_lo, _mm256_set1_epi32(8 * row_bytes));
  const __m256i zero = _mm256_setzero_si256();
  for (int64_t b = 0; b < nb; ++b) {
    const auto* base = reinterpret_cast<const int*>(reinterpret_cast<const char*>(w + (n0 * nb + b)) + 2);
    uint8_t* out = dst + b * kStripBlockBytes;
    for (int g = 0; g < kGroups; ++g) {
      const __m256i lo = _mm256_mask_i32gather_epi32(zero, base + g, offset_lo, mask_lo, 1);
      const __m256i hi = _mm256_mask_i32gather_epi32(zero, base + g, offset_hi, mask_hi, 1);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + g * 64), lo);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + g * 64 + 32), hi);
    }
    float d[kStripRows];
    for (int64_t r = 0; r < kStripRows; ++r) d[r] = r < valid ? F16ToF32(w[(n0 + r) * nb + b].d) : 0.0f;
    std::memcpy(out + kDOffset, d, sizeof(d));
  }
}

void Pack(const BlockQ8_0* w, int64_t n, int64_t nb, int64_t n0, int64_t num_strips, uint8_t* panel) {
  for (int64_t s = 0; s < num_strips; ++s) PackStrip(w, n, nb, n0 + s * kStripRows, panel + s * nb * kStripBlockBytes);
}

inline __m256i Broadcast4(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm256_set1_epi32(v);
}

// 8 int32 lanes += 4-byte dot of x (broadcast) with each lane's 4 weight bytes.
inline __m256i DotAdd(__m256i acc, __m256i abs_x, __m256i x, __m256i w) {
  const __m256i pairs = _mm256_maddubs_epi16(abs_x, _mm256_sign_epi8(w, x));
  return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

// y rows m0 .. m0+MR-1, columns n0 .. n0+15 (masked at n_end) from one strip.
template <int MR>
void Tile(const Acts& x, int64_t m0, const uint8_t* strip, int64_t n0, int64_t n_end, const float* bias, float* y) {
  __m256 acc[MR][2];
  #pragma GCC unroll 8
  for (int m = 0; m < MR; ++m) acc[m][0] = acc[m][1] = _mm256_setzero_ps();
  const uint8_t* xrow = x.q + m0 * x.k;
  for (int64_t b = 0; b < x.nb; ++b) {
    const uint8_t* wb = strip + b * kStripBlockBytes;
    __m256i dot[MR][2];
    #pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) dot[m][0] = dot[m][1] = _mm256_setzero_si256();
    #pragma GCC unroll 8
    for (int g = 0; g < kGroups; ++g) {
      const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb + g * 64));
      const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb + g * 64 + 32));
      #pragma GCC unroll 8
      for (int m = 0; m < MR; ++m) {
        const __m256i xv = Broadcast4(xrow + m * x.k + b * kQ8_0BlockElements + 4 * g);
        const __m256i ax = _mm256_abs_epi8(xv);
        dot[m][0] = DotAdd(dot[m][0], ax, xv, w0);
        dot[m][1] = DotAdd(dot[m][1], ax, xv, w1);
      }
    }
    #pragma GCC unroll 8
    for (int j = 0; j < 2; ++j) {
      const __m256 dw = _mm256_loadu_ps(reinterpret_cast<const float*>(wb + kDOffset) + 8 * j);
      #pragma GCC unroll 8
      for (int m = 0; m < MR; ++m) {
        const __m256 scale = _mm256_mul_ps(dw, _mm256_set1_ps(x.d[(m0 + m) * x.nb + b]));
        acc[m][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[m][j]), scale, acc[m][j]);
      }
    }
  }
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  #pragma GCC unroll 8
  for (int j = 0; j < 2; ++j) {
    const int64_t col = n0 + 8 * j;
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(n_end - col)), lane);
    const __m256 bv = bias ? _mm256_maskload_ps(bias + col, mask) : _mm256_setzero_ps();
    #pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) _mm256_maskstore_ps(y + (m0 + m) * n_end + col, mask, _mm256_add_ps(acc[m][j], bv));
  }
}

void Panel(const Acts& x, const uint8_t* panel, int64_t num_strips, int64_t n0, int64_t n_end, const float* bias,
           float* y) {
  const int64_t stride = x.nb * kStripBlockBytes;
  for (int64_t m0 = 0; m0 < x.num_rows; m0 += kTileRows) {
    const bool full = m0 + kTileRows <= x.num_rows;
    for (int64_t s = 0; s < num_strips; ++s) {
      if (full) {
        Tile<kTileRows>(x, m0, panel + s * stride, n0 + s * kStripRows, n_end, bias, y);
      } else {
        Tile<1>(x, m0, panel + s * stride, n0 + s * kStripRows, n_end, bias, y);
      }
    }
  }
}

}  // namespace

Q8_0GemmKernels Q8_0GemmKernelsAvx2() { return {.offset_acts = false, .pack = Pack, .panel = Panel}; }

}  // namespace pagellm::int8_gemm
