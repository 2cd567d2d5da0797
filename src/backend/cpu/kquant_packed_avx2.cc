// AVX2 kernels of the packed Q4_K / Q5_K / Q6_K / IQ4_XS / Q4_0 / Q5_0 / Q4_1 / Q5_1 / IQ4_NL / Q4_Z linear (kquant_packed.h), the baseline path.
//
// A ymm holds 4 columns of 8 weight rows (half a strip: bytes 32 h .. 32 h + 31 of each
// 64-byte group). The codes are unsigned (<= 63) and the activations signed (>= -127), so
// vpmaddubsw's int16 pair sums (<= 2 * 63 * 127) cannot saturate; vpmaddwd by ones widens
// them to the same int32 lanes vpdpbusd gives on AVX-512.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/kquant_packed_kernels.h"
#include "tensor/kquant_blocks.h"

namespace pagellm::kquant_packed {
namespace {

constexpr int kMaxTileRows = 2;

inline __m256i Broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm256_set1_epi32(v);
}

// a[m][j] = v for all m, j.
template <typename V, int MR, int NC>
inline void Fill(V (&a)[MR][NC], V v) {
  for (int m = 0; m < MR; ++m)
    for (int j = 0; j < NC; ++j) a[m][j] = v;
}

inline __m256i Load(const uint8_t* p) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(p)); }
inline __m256i Dot(__m256i acc, __m256i codes, __m256i x) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(codes, x), _mm256_set1_epi16(1)));
}
inline __m256 LoadF16x8(const uint8_t* p) { return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(p))); }
inline __m256i LoadU8x8(const uint8_t* p) {
  int64_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(v));
}
inline __m256i LoadS8x8(const uint8_t* p) {
  int64_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm256_cvtepi8_epi32(_mm_cvtsi64_si128(v));
}

// Bits 4..5 of each byte <- bits 2g..2g+1 of the same byte of h.
inline __m256i HighBits(__m256i h, int g) {
  const __m256i m = _mm256_set1_epi8(0x30);
  switch (g) {
    case 0: return _mm256_and_si256(_mm256_slli_epi16(h, 4), m);
    case 1: return _mm256_and_si256(_mm256_slli_epi16(h, 2), m);
    case 2: return _mm256_and_si256(h, m);
    default: return _mm256_and_si256(_mm256_srli_epi16(h, 2), m);
  }
}

template <int MR, int NH>
void Store(const __m256 (&acc)[MR][NH], const PackedActs& x, const KQuantPackedWeight& w, int64_t m0, int64_t s0,
           const float* bias, float* y) {
  for (int h = 0; h < NH; ++h) {
    const int64_t col = s0 * kKQuantPackRows + h * 8;
    const int64_t valid = std::clamp<int64_t>(w.n - col, 0, 8);
    for (int m = 0; m < MR; ++m) {
      float out[8];
      _mm256_storeu_ps(out, acc[m][h]);
      for (int64_t r = 0; r < valid; ++r) y[(m0 + m) * x.ldy + (col - x.col0) + r] = out[r] + (bias ? bias[col + r] : 0.0f);
    }
  }
}

// Half strip h of a tile from strip s0: its record and byte offset.
inline const uint8_t* HalfRecord(const KQuantPackedWeight& w, int64_t s0, int h, int64_t sb) {
  return w.record(s0 + h / 2, sb);
}

// Q5_K's 5th bits for group g (see kquant_packed_avx512.cc).
inline __m256i FifthBitLo(__m256i h, int g) { return _mm256_and_si256(_mm256_slli_epi16(h, 4 - g), _mm256_set1_epi8(0x10)); }
inline __m256i FifthBitHi(__m256i h, int g) { return _mm256_and_si256(_mm256_srli_epi16(h, g), _mm256_set1_epi8(0x10)); }

template <int MR, int NH, bool kQ5>
void TileQ4_K(const PackedActs& x, const KQuantPackedWeight& w, int64_t m0, int64_t s0, const float* bias, float* y) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m256 acc[MR][NH];
  Fill(acc, _mm256_setzero_ps());
  for (int64_t sb = 0; sb < x.nsb; ++sb) {
    const int8_t* xb = x.q + m0 * x.k + sb * 256;
    __m256i isum[MR][NH], imin[MR][NH];
    for (int m = 0; m < MR; ++m)
      for (int h = 0; h < NH; ++h) isum[m][h] = imin[m][h] = _mm256_setzero_si256();
    for (int sub = 0; sub < 8; ++sub) {
      __m256i dot[MR][NH];
      Fill(dot, _mm256_setzero_si256());
      for (int g = 0; g < 4; ++g) {
        for (int h = 0; h < NH; ++h) {
          const uint8_t* rec = HalfRecord(w, s0, h, sb);
          const __m256i v = Load(rec + (sub * 4 + g) * 64 + (h % 2) * 32);
          __m256i lo = _mm256_and_si256(v, low4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
          if constexpr (kQ5) {
            const __m256i h5 = Load(rec + kQ5_KQh + sub * 64 + (h % 2) * 32);
            lo = _mm256_or_si256(lo, FifthBitLo(h5, g));
            hi = _mm256_or_si256(hi, FifthBitHi(h5, g));
          }
          for (int m = 0; m < MR; ++m) {
            dot[m][h] = Dot(dot[m][h], lo, Broadcast4(xb + m * x.k + sub * 32 + 4 * g));
            dot[m][h] = Dot(dot[m][h], hi, Broadcast4(xb + m * x.k + sub * 32 + 16 + 4 * g));
          }
        }
      }
      for (int h = 0; h < NH; ++h) {
        const __m256i sc = LoadU8x8(HalfRecord(w, s0, h, sb) + kQ4_KSc + sub * 16 + (h % 2) * 8);
        for (int m = 0; m < MR; ++m) isum[m][h] = _mm256_add_epi32(isum[m][h], _mm256_mullo_epi32(dot[m][h], sc));
      }
    }
    for (int h = 0; h < NH; ++h) {
      const uint8_t* rec = HalfRecord(w, s0, h, sb);
      for (int p = 0; p < 4; ++p) {
        const __m256i mn = _mm256_cvtepu8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(rec + kQ4_KMn + p * 32 + (h % 2) * 16)));
        for (int m = 0; m < MR; ++m) {
          const __m256i pair = _mm256_set1_epi32(x.aux[((m0 + m) * x.nsb + sb) * 16 + p]);
          imin[m][h] = _mm256_add_epi32(imin[m][h], _mm256_madd_epi16(mn, pair));
        }
      }
      const __m256 dw = LoadF16x8(rec + kQ4_KD + (h % 2) * 16), dmin = LoadF16x8(rec + kQ4_KDmin + (h % 2) * 16);
      for (int m = 0; m < MR; ++m) {
        const __m256 dx = _mm256_set1_ps(x.d[(m0 + m) * x.nsb + sb]);
        acc[m][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[m][h]), _mm256_mul_ps(dw, dx), acc[m][h]);
        acc[m][h] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(imin[m][h]), _mm256_mul_ps(dmin, dx), acc[m][h]);
      }
    }
  }
  Store<MR, NH>(acc, x, w, m0, s0, bias, y);
}

template <int MR, int NH>
void TileQ6_K(const PackedActs& x, const KQuantPackedWeight& w, int64_t m0, int64_t s0, const float* bias, float* y) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m256 acc[MR][NH];
  Fill(acc, _mm256_setzero_ps());
  for (int64_t sb = 0; sb < x.nsb; ++sb) {
    const int8_t* xb = x.q + m0 * x.k + sb * 256;
    __m256i isum[MR][NH];
    Fill(isum, _mm256_setzero_si256());
    for (int blk = 0; blk < 8; ++blk) {
      for (int h = 0; h < NH; ++h) {
        const uint8_t* rec = HalfRecord(w, s0, h, sb);
        const __m256i ha = Load(rec + kQ6_KQh + (blk * 2) * 64 + (h % 2) * 32);
        const __m256i hb = Load(rec + kQ6_KQh + (blk * 2 + 1) * 64 + (h % 2) * 32);
        __m256i dot_a[MR], dot_b[MR];
        for (int m = 0; m < MR; ++m) {
          const int32_t* aux = x.aux + ((m0 + m) * x.nsb + sb) * 16;
          dot_a[m] = _mm256_set1_epi32(aux[2 * blk]);
          dot_b[m] = _mm256_set1_epi32(aux[2 * blk + 1]);
        }
        for (int g = 0; g < 4; ++g) {
          const __m256i v = Load(rec + (blk * 4 + g) * 64 + (h % 2) * 32);
          const __m256i lo = _mm256_or_si256(_mm256_and_si256(v, low4), HighBits(ha, g));
          const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), low4), HighBits(hb, g));
          for (int m = 0; m < MR; ++m) {
            dot_a[m] = Dot(dot_a[m], lo, Broadcast4(xb + m * x.k + blk * 32 + 4 * g));
            dot_b[m] = Dot(dot_b[m], hi, Broadcast4(xb + m * x.k + blk * 32 + 16 + 4 * g));
          }
        }
        const __m256i sa = LoadS8x8(rec + kQ6_KSc + blk * 32 + (h % 2) * 8);
        const __m256i sbv = LoadS8x8(rec + kQ6_KSc + blk * 32 + 16 + (h % 2) * 8);
        for (int m = 0; m < MR; ++m) {
          isum[m][h] = _mm256_add_epi32(isum[m][h], _mm256_mullo_epi32(dot_a[m], sa));
          isum[m][h] = _mm256_add_epi32(isum[m][h], _mm256_mullo_epi32(dot_b[m], sbv));
        }
      }
    }
    for (int h = 0; h < NH; ++h) {
      const __m256 dw = LoadF16x8(HalfRecord(w, s0, h, sb) + kQ6_KD + (h % 2) * 16);
      for (int m = 0; m < MR; ++m) {
        const __m256 dx = _mm256_set1_ps(x.d[(m0 + m) * x.nsb + sb]);
        acc[m][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[m][h]), _mm256_mul_ps(dw, dx), acc[m][h]);
      }
    }
  }
  Store<MR, NH>(acc, x, w, m0, s0, bias, y);
}

// IQ4_XS: signed table values (vpshufb) with the sign trick, signed sub-block scales.
template <int MR, int NH>
void TileIq4Xs(const PackedActs& x, const KQuantPackedWeight& w, int64_t m0, int64_t s0, const float* bias, float* y) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4NlValues)));
  __m256 acc[MR][NH];
  Fill(acc, _mm256_setzero_ps());
  for (int64_t sb = 0; sb < x.nsb; ++sb) {
    const int8_t* xb = x.q + m0 * x.k + sb * 256;
    for (int h = 0; h < NH; ++h) {
      const uint8_t* rec = HalfRecord(w, s0, h, sb);
      __m256i isum[MR];
      for (int m = 0; m < MR; ++m) isum[m] = _mm256_setzero_si256();
      for (int sub = 0; sub < 8; ++sub) {
        __m256i dot[MR];
        for (int m = 0; m < MR; ++m) dot[m] = _mm256_setzero_si256();
        for (int g = 0; g < 4; ++g) {
          const __m256i v = Load(rec + (sub * 4 + g) * 64 + (h % 2) * 32);
          const __m256i vl = _mm256_shuffle_epi8(lut, _mm256_and_si256(v, low4));
          const __m256i vh = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(v, 4), low4));
          for (int m = 0; m < MR; ++m) {
            const __m256i xl = Broadcast4(xb + m * x.k + sub * 32 + 4 * g);
            const __m256i xh = Broadcast4(xb + m * x.k + sub * 32 + 16 + 4 * g);
            dot[m] = Dot(dot[m], _mm256_abs_epi8(vl), _mm256_sign_epi8(xl, vl));
            dot[m] = Dot(dot[m], _mm256_abs_epi8(vh), _mm256_sign_epi8(xh, vh));
          }
        }
        const __m256i sc = LoadS8x8(rec + kIq4XsSc + sub * 16 + (h % 2) * 8);
        for (int m = 0; m < MR; ++m) isum[m] = _mm256_add_epi32(isum[m], _mm256_mullo_epi32(dot[m], sc));
      }
      const __m256 dw = LoadF16x8(rec + kIq4XsD + (h % 2) * 16);
      for (int m = 0; m < MR; ++m) {
        const __m256 dx = _mm256_set1_ps(x.d[(m0 + m) * x.nsb + sb]);
        acc[m][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[m]), _mm256_mul_ps(dw, dx), acc[m][h]);
      }
    }
  }
  Store<MR, NH>(acc, x, w, m0, s0, bias, y);
}

// Q4_0 / Q5_0 / Q4_Z (unsigned codes from the centring term, as the k-quants), Q4_1 / Q5_1
// (unsigned codes from 0, then the offset's fma with the block sum) or IQ4_NL (its signed
// values looked up, then llama.cpp's sign trick: |v| * sign(x, v), no offset).
template <int MR, int NH, DType kType>
void TileBlock32(const PackedActs& x, const KQuantPackedWeight& w, int64_t m0, int64_t s0, const float* bias,
                 float* y) {
  constexpr bool kAffine = Block32IsAffine(kType), kFifthBit = Block32HasFifthBit(kType);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  constexpr int kShift = kType == DType::kQ4_0 ? 4 : 3;
  const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4NlValues)));
  __m256 acc[MR][NH];
  Fill(acc, _mm256_setzero_ps());
  for (int64_t b = 0; b < x.nsb; ++b) {
    const int8_t* xb = x.q + m0 * x.k + b * 32;
    for (int h = 0; h < NH; ++h) {
      const uint8_t* rec = HalfRecord(w, s0, h, b);
      __m256i dot[MR];
      if constexpr (kType == DType::kQ4_Z) {  // -z * sum(x), z per row from the group's params
        const __m256i z = LoadU8x8(w.params(s0 + h / 2, b) + kQ4_ZParamZ + (h % 2) * 8);
        for (int m = 0; m < MR; ++m) dot[m] = _mm256_mullo_epi32(z, _mm256_set1_epi32(x.aux[(m0 + m) * x.nsb + b] / 128));
      } else {
        for (int m = 0; m < MR; ++m) {
          dot[m] = kType == DType::kIQ4_NL || kAffine ? _mm256_setzero_si256()
                                                      : _mm256_set1_epi32(x.aux[(m0 + m) * x.nsb + b] >> kShift);
        }
      }
      const __m256i h5 = kFifthBit ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + kQ5_0Qh + (h % 2) * 32))
                                   : _mm256_setzero_si256();
      for (int g = 0; g < 4; ++g) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + g * 64 + (h % 2) * 32));
        __m256i lo = _mm256_and_si256(v, low4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
        if constexpr (kFifthBit) {
          lo = _mm256_or_si256(lo, FifthBitLo(h5, g));
          hi = _mm256_or_si256(hi, FifthBitHi(h5, g));
        }
        for (int m = 0; m < MR; ++m) {
          const __m256i xl = Broadcast4(xb + m * x.k + 4 * g), xh = Broadcast4(xb + m * x.k + 16 + 4 * g);
          if constexpr (kType == DType::kIQ4_NL) {
            const __m256i vl = _mm256_shuffle_epi8(lut, lo), vh = _mm256_shuffle_epi8(lut, hi);
            dot[m] = Dot(dot[m], _mm256_abs_epi8(vl), _mm256_sign_epi8(xl, vl));
            dot[m] = Dot(dot[m], _mm256_abs_epi8(vh), _mm256_sign_epi8(xh, vh));
          } else {
            dot[m] = Dot(Dot(dot[m], lo, xl), hi, xh);
          }
        }
      }
      const uint8_t* d_w = kType == DType::kQ4_Z ? w.params(s0 + h / 2, b) : rec + Block32D(kType);
      const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(d_w + (h % 2) * 16)));
      for (int m = 0; m < MR; ++m) {
        const __m256 scale = _mm256_mul_ps(dw, _mm256_set1_ps(x.d[(m0 + m) * x.nsb + b]));
        acc[m][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[m]), scale, acc[m][h]);
      }
      if constexpr (kAffine) {  // sum(x) = aux / -128 exactly
        const __m256 mw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + Block32M(kType) + (h % 2) * 16)));
        for (int m = 0; m < MR; ++m) {
          const __m256 sum = _mm256_set1_ps(static_cast<float>(x.aux[(m0 + m) * x.nsb + b] / -128));
          acc[m][h] = _mm256_fmadd_ps(sum, _mm256_mul_ps(mw, _mm256_set1_ps(x.d[(m0 + m) * x.nsb + b])), acc[m][h]);
        }
      }
    }
  }
  Store<MR, NH>(acc, x, w, m0, s0, bias, y);
}

template <int MR>
void TileRow(const PackedActs& x, const KQuantPackedWeight& w, int64_t m0, int64_t s_begin, int64_t s_end,
             const float* bias, float* y) {
  for (int64_t s = s_begin; s < s_end; ++s) {
    switch (w.dtype) {
      case DType::kQ4_K: TileQ4_K<MR, 2, false>(x, w, m0, s, bias, y); break;
      case DType::kQ5_K: TileQ4_K<MR, 2, true>(x, w, m0, s, bias, y); break;
      case DType::kQ6_K: TileQ6_K<MR, 2>(x, w, m0, s, bias, y); break;
      case DType::kIQ4_XS: TileIq4Xs<MR, 2>(x, w, m0, s, bias, y); break;
      case DType::kQ4_0: TileBlock32<MR, 2, DType::kQ4_0>(x, w, m0, s, bias, y); break;
      case DType::kQ5_0: TileBlock32<MR, 2, DType::kQ5_0>(x, w, m0, s, bias, y); break;
      case DType::kQ4_1: TileBlock32<MR, 2, DType::kQ4_1>(x, w, m0, s, bias, y); break;
      case DType::kQ5_1: TileBlock32<MR, 2, DType::kQ5_1>(x, w, m0, s, bias, y); break;
      case DType::kQ4_Z: TileBlock32<MR, 2, DType::kQ4_Z>(x, w, m0, s, bias, y); break;
      default: TileBlock32<MR, 2, DType::kIQ4_NL>(x, w, m0, s, bias, y); break;
    }
  }
}

}  // namespace

void StripsAvx2(const PackedActs& x, const KQuantPackedWeight& w, int64_t s_begin, int64_t s_end, const float* bias,
                float* y) {
  for (int64_t m0 = 0; m0 < x.num_rows; m0 += kMaxTileRows) {
    if (x.num_rows - m0 >= 2) TileRow<2>(x, w, m0, s_begin, s_end, bias, y);
    else TileRow<1>(x, w, m0, s_begin, s_end, bias, y);
  }
}

}  // namespace pagellm::kquant_packed
