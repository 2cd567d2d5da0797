// AMX-INT8 kernels of the packed k-quant linear (kquant_packed.h) for batches and prefill:
// the integer dot products of 16 activation rows x 16 weight rows x one scale's columns run
// as one tdpbusd-family instruction (tdpbsud: signed activation bytes x unsigned codes)
// instead of 8 x 16 vpdpbusd; the scales, mins and offsets are then applied to the tile's
// int32 sums exactly as the VNNI kernel applies them to its own (kquant_packed_avx512.cc),
// in the same order, so the two give the same floats bit for bit and a request's logits do
// not depend on which kernel its step ran on (batching, chunked prefill, verification).
//
// Per work item (up to 4 strips): each strip's codes are unpacked once into one byte per
// weight in tdpbsud's B layout ([columns / 4][16 weight rows][4]; 16 bytes per column,
// Q6_K's top bits and Q5's 5th bits or-ed in, IQ4 codes looked up as table value + 128),
// then every tile of 2 x 16 activation rows x 2 strips reads them from there: per unit of
// columns (32, or Q6_K's 16: one sub-block scale) 2 A loads (the int8 activations, in
// place), 2 B loads, 4 tdpbsud into 4 C tiles, 4 stores; per activation row and strip,
// the unit's int32 sums take their scale (vpmulld) as in the VNNI kernel.
//
// Activation rows are read 16 at a time: the caller pads x.q to a multiple of 16 rows.
// Everything after the pragma is compiled for AVX-512 + AMX; StripsAmx with the hardware
// tiles only runs where CpuSupportsAmxInt8(); with the software model (amx_tiles.h) it
// runs on any AVX-512 VNNI machine (tests).
#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>

#include "backend/cpu/kquant_packed_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,f16c,fma,amx-tile,amx-int8")
#include "backend/cpu/amx_tiles.h"
#include "backend/cpu/kquant_packed_codes_avx512.h"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace pagellm::kquant_packed {
namespace {

constexpr int kTileRows = 16;  // activation rows of an A tile, weight rows of a strip
// Tile registers: A (activations) 0-1, B (codes) 2-3, C (sums) 4-7.
constexpr int kTileA = 0, kTileB = 2, kTileC = 4;

// Columns per tdpbsud: one scale's (Q6_K's sub-blocks are 16 columns, every other type's 32).
constexpr int UnitCols(DType t) { return t == DType::kQ6_K ? 16 : 32; }

// Rows m0 .. m0 + 16 MT of y (those below x.num_rows) for strips s0 .. s0 + NS. codes: the
// first strip's unpacked codes, the next strip's strip_bytes on.
template <class Tiles, DType kType, int MT, int NS>
void TileAmx(Tiles& t, const PackedActs& x, const KQuantPackedWeight& w, const uint8_t* codes, int64_t strip_bytes,
             int64_t m0, int64_t s0, const float* bias, float* y) {
  constexpr int kUnit = UnitCols(kType), kUnits = BlockCols(kType) / kUnit;
  constexpr bool kSuper = IsSuperBlock(kType);
  constexpr bool kAffine = Block32IsAffine(kType);
  const int rows = static_cast<int>(std::min<int64_t>(kTileRows * MT, x.num_rows - m0));
  alignas(64) int32_t c[MT][NS][kTileRows][kTileRows];
  __m512 acc[kTileRows * MT][NS];
  __m512i isum[kTileRows * MT][NS];
  for (int m = 0; m < rows; ++m)
    for (int j = 0; j < NS; ++j) acc[m][j] = _mm512_setzero_ps();
  const auto dot = [&](int m, int j) { return _mm512_load_si512(c[m / kTileRows][j][m % kTileRows]); };
  for (int64_t sb = 0; sb < x.nsb; ++sb) {
    const uint8_t* rec[NS];
    for (int j = 0; j < NS; ++j) rec[j] = w.record(s0 + j, sb);
    if constexpr (kSuper) {
      for (int m = 0; m < rows; ++m)
        for (int j = 0; j < NS; ++j) isum[m][j] = _mm512_setzero_si512();
    }
    for (int u = 0; u < kUnits; ++u) {
      const int64_t col = sb * BlockCols(kType) + u * kUnit;
      Unroll<MT>([&]<int I>() { t.template Load<kTileA + I>(x.q + (m0 + kTileRows * I) * x.k + col, x.k); });
      Unroll<NS>([&]<int J>() { t.template Load<kTileB + J>(codes + J * strip_bytes + col * kTileRows, 64); });
      Unroll<MT>([&]<int I>() {
        Unroll<NS>([&]<int J>() {
          t.template Zero<kTileC + I * NS + J>();
          t.template DpBsud<kTileC + I * NS + J, kTileA + I, kTileB + J>();
          t.template Store<kTileC + I * NS + J>(c[I][J], 64);
        });
      });
      for (int j = 0; j < NS; ++j) {
        if constexpr (kType == DType::kQ4_K || kType == DType::kQ5_K) {
          const __m512i sc = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(rec[j] + kQ4_KSc + u * 16)));
          for (int m = 0; m < rows; ++m) isum[m][j] = _mm512_add_epi32(isum[m][j], _mm512_mullo_epi32(dot(m, j), sc));
        } else if constexpr (kSuper) {  // Q6_K, IQ4_XS: the unit's offset term first, signed scales
          const uint8_t* scales = rec[j] + (kType == DType::kQ6_K ? kQ6_KSc : kIq4XsSc) + u * 16;
          const __m512i sc = _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(scales)));
          for (int m = 0; m < rows; ++m) {
            const __m512i d = _mm512_add_epi32(_mm512_set1_epi32(x.aux[((m0 + m) * x.nsb + sb) * 16 + u]), dot(m, j));
            isum[m][j] = _mm512_add_epi32(isum[m][j], _mm512_mullo_epi32(d, sc));
          }
        } else {  // a 32-column block: its centring term, then the block's fp32 fma(s)
          constexpr int kShift = kType == DType::kQ4_0 ? 4 : kType == DType::kQ5_0 ? 3 : 0;
          const uint8_t* d_w = kType == DType::kQ4_Z ? w.params(s0 + j, sb) : rec[j] + Block32D(kType);
          const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(d_w)));
          __m512i z = _mm512_setzero_si512();
          if constexpr (kType == DType::kQ4_Z) {
            z = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.params(s0 + j, sb) + kQ4_ZParamZ)));
          }
          __m512 mw = _mm512_setzero_ps();
          if constexpr (kAffine) {
            mw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec[j] + Block32M(kType))));
          }
          for (int m = 0; m < rows; ++m) {
            const int32_t aux = x.aux[(m0 + m) * x.nsb + sb];
            __m512i corr;
            if constexpr (kType == DType::kQ4_Z) corr = _mm512_mullo_epi32(z, _mm512_set1_epi32(aux / 128));
            else if constexpr (kAffine) corr = _mm512_setzero_si512();
            else corr = _mm512_srai_epi32(_mm512_set1_epi32(aux), kShift);
            const __m512 dx = _mm512_set1_ps(x.d[(m0 + m) * x.nsb + sb]);
            const __m512i d = _mm512_add_epi32(corr, dot(m, j));
            acc[m][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_mul_ps(dw, dx), acc[m][j]);
            if constexpr (kAffine) {  // sum(x) = aux / -128 exactly
              const __m512 sum = _mm512_set1_ps(static_cast<float>(aux / -128));
              acc[m][j] = _mm512_fmadd_ps(sum, _mm512_mul_ps(mw, dx), acc[m][j]);
            }
          }
        }
      }
    }
    if constexpr (kSuper) {  // the super-block's fp32 fma(s), as TileQ4_K / TileQ6_K / TileIq4Xs
      for (int j = 0; j < NS; ++j) {
        const int64_t d_off = kType == DType::kQ6_K ? kQ6_KD : kType == DType::kIQ4_XS ? kIq4XsD : kQ4_KD;
        const __m512 dw = LoadF16x16(rec[j] + d_off);
        for (int m = 0; m < rows; ++m) {
          const __m512 dx = _mm512_set1_ps(x.d[(m0 + m) * x.nsb + sb]);
          acc[m][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[m][j]), _mm512_mul_ps(dw, dx), acc[m][j]);
          if constexpr (kType == DType::kQ4_K || kType == DType::kQ5_K) {  // mins from the block-sum pairs
            __m512i imin = _mm512_setzero_si512();
            for (int p = 0; p < 4; ++p) {
              const __m512i mn = _mm512_cvtepu8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(rec[j] + kQ4_KMn + p * 32)));
              imin = _mm512_dpwssd_epi32(imin, mn, _mm512_set1_epi32(x.aux[((m0 + m) * x.nsb + sb) * 16 + p]));
            }
            const __m512 dmin = LoadF16x16(rec[j] + kQ4_KDmin);
            acc[m][j] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(imin), _mm512_mul_ps(dmin, dx), acc[m][j]);
          }
        }
      }
    }
  }
  for (int j = 0; j < NS; ++j) {
    const int64_t col = (s0 + j) * kKQuantPackRows;
    const int64_t valid = std::clamp<int64_t>(w.n - col, 0, kKQuantPackRows);
    const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1u);
    const __m512 bv = bias ? _mm512_maskz_loadu_ps(mask, bias + col) : _mm512_setzero_ps();
    for (int m = 0; m < rows; ++m) {
      _mm512_mask_storeu_ps(y + (m0 + m) * x.ldy + (col - x.col0), mask, _mm512_add_ps(acc[m][j], bv));
    }
  }
}

// One set of (modelled) tiles per thread, whatever the type: ModelTiles holds 8 KB.
template <class Tiles>
Tiles& ThreadTiles() {
  thread_local Tiles tiles;
  return tiles;
}

template <class Tiles, DType kType>
void StripsOf(const PackedActs& x, const KQuantPackedWeight& w, int64_t s_begin, int64_t s_end, const float* bias,
              float* y) {
  constexpr int kUnit = UnitCols(kType);
  TileConfig cfg;
  for (int i = 0; i < 2; ++i) {
    cfg.Set(kTileA + i, kTileRows, kUnit);
    cfg.Set(kTileB + i, kUnit / 4, 64);
  }
  for (int i = 0; i < 4; ++i) cfg.Set(kTileC + i, kTileRows, 64);
  Tiles& tiles = ThreadTiles<Tiles>();
  tiles.Configure(cfg);
  // The item's strips unpacked once, read by every tile of activation rows.
  const uint8_t* codes = UnpackStripsAvx512(w, s_begin, s_end);
  const int64_t strip_bytes = kKQuantPackRows * w.k;
  for (int64_t m0 = 0; m0 < x.num_rows; m0 += 2 * kTileRows) {
    const bool two_a = x.num_rows - m0 > kTileRows;
    for (int64_t s = s_begin; s < s_end; s += 2) {
      const uint8_t* c = codes + (s - s_begin) * strip_bytes;
      const bool two_b = s + 1 < s_end;
      if (two_a && two_b) TileAmx<Tiles, kType, 2, 2>(tiles, x, w, c, strip_bytes, m0, s, bias, y);
      else if (two_a) TileAmx<Tiles, kType, 2, 1>(tiles, x, w, c, strip_bytes, m0, s, bias, y);
      else if (two_b) TileAmx<Tiles, kType, 1, 2>(tiles, x, w, c, strip_bytes, m0, s, bias, y);
      else TileAmx<Tiles, kType, 1, 1>(tiles, x, w, c, strip_bytes, m0, s, bias, y);
    }
  }
  tiles.Release();
}

template <class Tiles>
void StripsWith(const PackedActs& x, const KQuantPackedWeight& w, int64_t s_begin, int64_t s_end, const float* bias,
                float* y) {
  switch (w.dtype) {
    case DType::kQ4_K: return StripsOf<Tiles, DType::kQ4_K>(x, w, s_begin, s_end, bias, y);
    case DType::kQ5_K: return StripsOf<Tiles, DType::kQ5_K>(x, w, s_begin, s_end, bias, y);
    case DType::kQ6_K: return StripsOf<Tiles, DType::kQ6_K>(x, w, s_begin, s_end, bias, y);
    case DType::kIQ4_XS: return StripsOf<Tiles, DType::kIQ4_XS>(x, w, s_begin, s_end, bias, y);
    case DType::kQ4_0: return StripsOf<Tiles, DType::kQ4_0>(x, w, s_begin, s_end, bias, y);
    case DType::kQ5_0: return StripsOf<Tiles, DType::kQ5_0>(x, w, s_begin, s_end, bias, y);
    case DType::kQ4_1: return StripsOf<Tiles, DType::kQ4_1>(x, w, s_begin, s_end, bias, y);
    case DType::kQ5_1: return StripsOf<Tiles, DType::kQ5_1>(x, w, s_begin, s_end, bias, y);
    case DType::kQ4_Z: return StripsOf<Tiles, DType::kQ4_Z>(x, w, s_begin, s_end, bias, y);
    default: return StripsOf<Tiles, DType::kIQ4_NL>(x, w, s_begin, s_end, bias, y);
  }
}

}  // namespace

void StripsAmx(const PackedActs& x, const KQuantPackedWeight& w, int64_t s_begin, int64_t s_end, const float* bias,
               float* y, bool model_tiles) {
  if (model_tiles) return StripsWith<ModelTiles>(x, w, s_begin, s_end, bias, y);
  StripsWith<AmxTiles>(x, w, s_begin, s_end, bias, y);
}

}  // namespace pagellm::kquant_packed

#pragma GCC pop_options
