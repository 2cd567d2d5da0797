// AVX-512 VNNI kernels of the packed Q4_K / Q5_K / Q6_K / IQ4_XS / Q4_0 / Q5_0 / Q4_1 / Q5_1 / IQ4_NL / Q4_Z linear (kquant_packed.h). Everything
// after the pragma is compiled for AVX-512 and only runs when CpuSupportsAvx512Vnni().
//
// Per strip, super-block and 32 columns: 4 zmm loads of code bytes, split into nibbles
// (and Q6_K's top 2 bits or-ed in), 8 vpdpbusd per activation row into one int32 lane per
// weight row; one vpmulld per sub-block scale; Q4_K's mins by 4 vpdpwssd of the u8 mins
// with the activations' block-sum pairs; two fp32 fma per super-block.
#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>

#include "backend/cpu/kquant_packed_kernels.h"
#include "common/status.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,f16c,fma")
#include "backend/cpu/kquant_packed_codes_avx512.h"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace pagellm::kquant_packed {
namespace {

constexpr int kMaxTileRows = 4;

inline __m512i Broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm512_set1_epi32(v);
}

// a[m][j] = v for all m, j.
template <typename V, int MR, int NC>
inline void Fill(V (&a)[MR][NC], V v) {
  for (int m = 0; m < MR; ++m)
    for (int j = 0; j < NC; ++j) a[m][j] = v;
}

// Strip s's codes, one byte per weight, [k / 4][16 rows][4]: the 4-column group g of a
// record's 32 columns holds columns 4g..4g+3 in its low nibbles and 16+4g.. in its high ones
// (kquant_packed.h), so its two halves become 4-column groups g and 4 + g.
template <DType kType>
void UnpackStrip(const KQuantPackedWeight& w, int64_t s, uint8_t* out) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m512i lut = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(kIq4NlPlus128)));
  constexpr int kBlocks = BlockCols(kType) / 32;  // 32-column blocks per record
  for (int64_t sb = 0; sb < w.nsb; ++sb) {
    const uint8_t* rec = w.record(s, sb);
    for (int blk = 0; blk < kBlocks; ++blk) {
      uint8_t* o = out + (sb * kBlocks + blk) * 512;
      if constexpr (kType == DType::kQ6_K) {
        const __m512i ha = Load(rec + kQ6_KQh + (blk * 2) * 64), hb = Load(rec + kQ6_KQh + (blk * 2 + 1) * 64);
        Unroll<4>([&]<int G>() {
          const __m512i v = Load(rec + (blk * 4 + G) * 64);
          _mm512_store_si512(o + G * 64, _mm512_or_si512(_mm512_and_si512(v, low4), HighBits<G>(ha)));
          _mm512_store_si512(o + 256 + G * 64,
                             _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v, 4), low4), HighBits<G>(hb)));
        });
      } else {
        __m512i h5 = _mm512_setzero_si512();
        if constexpr (kType == DType::kQ5_K) h5 = Load(rec + kQ5_KQh + blk * 64);
        if constexpr (kType == DType::kQ5_0 || kType == DType::kQ5_1) h5 = _mm512_loadu_si512(rec + kQ5_0Qh);
        for (int g = 0; g < 4; ++g) {
          const __m512i v = _mm512_loadu_si512(rec + blk * 256 + g * 64);
          __m512i lo = _mm512_and_si512(v, low4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
          if constexpr (kType == DType::kQ5_K || kType == DType::kQ5_0 || kType == DType::kQ5_1) {
            lo = _mm512_or_si512(lo, FifthBitLo(h5, g));
            hi = _mm512_or_si512(hi, FifthBitHi(h5, g));
          } else if constexpr (kType == DType::kIQ4_XS || kType == DType::kIQ4_NL) {
            lo = _mm512_shuffle_epi8(lut, lo);
            hi = _mm512_shuffle_epi8(lut, hi);
          }
          _mm512_store_si512(o + g * 64, lo);
          _mm512_store_si512(o + 256 + g * 64, hi);
        }
      }
    }
  }
}

// 4-column groups [kk_begin, kk_end) of one 32-column block of unpacked codes (codes[j]: strip
// j's block) dotted with the activations from xb (the block's column 0): one zmm load per
// strip and group, one vpdpbusd per row.
template <int MR, int NS>
inline void UnpackedDots(const PackedActs& x, const uint8_t* const (&codes)[NS], const int8_t* xb, int kk_begin,
                         int kk_end, __m512i (&dot)[MR][NS]) {
  #pragma GCC unroll 8
  for (int kk = kk_begin; kk < kk_end; ++kk) {
    __m512i v[NS];
    #pragma GCC unroll 4
    for (int j = 0; j < NS; ++j) v[j] = Load(codes[j] + kk * 64);
    #pragma GCC unroll 4
    for (int m = 0; m < MR; ++m) {
      const __m512i xv = Broadcast4(xb + m * x.k + 4 * kk);
      #pragma GCC unroll 4
      for (int j = 0; j < NS; ++j) dot[m][j] = _mm512_dpbusd_epi32(dot[m][j], v[j], xv);
    }
  }
}

// Prefetches RecordRuns a slice per Step(), so that `steps` calls cover them: the records a
// thread reads next, spread over the tiles that compute from the cache meanwhile.
class StreamPrefetch {
 public:
  StreamPrefetch(const RecordRuns& runs, int64_t steps)
      : lines_(runs), lines_per_step_(lines_.max_lines() / std::max<int64_t>(steps, 1) + 1) {}
  void Step() {
    for (int64_t i = 0; i < lines_per_step_; ++i) {
      const uint8_t* line = lines_.Next();
      if (line == nullptr) return;
      asm volatile("prefetcht0 %0" : : "m"(*line));  // asm: GCC drops prefetch-only loops (see PrefetchAhead)
    }
  }

 private:
  RecordLines lines_;
  int64_t lines_per_step_;
};

// What a tile reads besides its activations and records: its unpacked codes (strip j of
// the tile at first + j * 16 k; null when the tile decodes the packed records itself), and
// `next`, the records to prefetch a slice of at each step instead of the tile's own ahead
// (null: its own; only the first tile of rows over a strip reads them from memory).
struct Sources {
  const uint8_t* first = nullptr;
  int64_t strip_bytes = 0;
  StreamPrefetch* next = nullptr;
  template <int NS>
  void Block(int64_t block, const uint8_t* (&out)[NS]) const {
    for (int j = 0; j < NS; ++j) out[j] = first + j * strip_bytes + block * 512;
  }
};

// Stores acc + bias for rows m0.., strips s0.. (masked at w.n).
template <int MR, int NS>
void Store(const __m512 (&acc)[MR][NS], const PackedActs& x, const KQuantPackedWeight& w, int64_t m0, int64_t s0,
           const float* bias, float* y) {
  #pragma GCC unroll 4
  for (int j = 0; j < NS; ++j) {
    const int64_t col = (s0 + j) * kKQuantPackRows;
    const int64_t valid = std::clamp<int64_t>(w.n - col, 0, kKQuantPackRows);
    const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1u);
    const __m512 bv = bias ? _mm512_maskz_loadu_ps(mask, bias + col) : _mm512_setzero_ps();
    #pragma GCC unroll 4
    for (int m = 0; m < MR; ++m) _mm512_mask_storeu_ps(y + (m0 + m) * x.ldy + (col - x.col0), mask, _mm512_add_ps(acc[m][j], bv));
  }
}

// Software prefetch ahead of the slice [begin, end) of the tile's current records, called
// once per step with the step's share of the record.
// The GEMV's tiles of NS = 4 strips read the 4 interleaved records of one strip group
// (KQuantPackedWeight::record): one contiguous stream, which runs on into the next tile's
// group. They prefetch `ahead` bytes ahead in it, as asm volatile: GCC deleted _mm_prefetch
// loops from every NS > 1 instantiation (a loop of nothing but prefetches counts as free
// of side effects; objdump showed no prefetcht0 in them). The super-block types prefetch
// one super-block of the group ahead (4 records: 9-14 KB), the 32-column block types 4 KB.
// Measured on a 2-core Zen 5 whose two vCPUs are real cores (2 threads: 2x one thread's
// vpdpbusd rate, 53 GB/s read), decode_pass_bench (a whole 0.6B model's linears, far past
// the L3), passes alternating in one process:
// - one stream per strip, 2 KB ahead in each: Q4_0 25-27 -> 31-33 GB/s, Q6_K 28.2 -> 32.9,
//   Q4_K 29.5 -> 32.3 (against no prefetch);
// - one stream per group (this layout), 2 threads: Q6_K 30-31 -> 40-42 GB/s, and on one
//   thread 17-18 -> 20-25 (its record reads the code and the top-bit planes at two
//   places: 8 streams per tile before); Q4_K unchanged at the same distance;
// - distances in it: Q4_K 8 KB 3-7 % faster than 12 or 16; Q5_K and Q6_K 12-16 KB best
//   (8 KB 2-6 % slower, 24-32 KB 7-17 % slower); Q4_0 4 KB 0-4 % faster than 8.
// The one-strip tiles (the GEMM, the GEMV's tail) prefetch their own strip's records ~2 KB
// on (its next super-block, or the 7th next 32-column block): in this layout the bytes
// right after a record belong to the next strip (prefetching 2 KB on in memory, as before
// the interleave, cost prefill 512 ~8 %).
constexpr int64_t kBlock32Ahead = 4096;
constexpr int64_t kOneStripAhead = 2048;
// How far ahead a tile of NS strips from s0 prefetches, in bytes from its current record.
template <int NS>
inline int64_t PrefetchDistance(const KQuantPackedWeight& w, int64_t s0, int64_t group_ahead) {
  if constexpr (NS > 1) return group_ahead;
  const int64_t stride = w.nsb > 1 ? w.record(s0, 1) - w.record(s0, 0) : w.record_bytes;
  return stride * std::max<int64_t>(1, kOneStripAhead / w.record_bytes);
}
template <int NS>
inline void PrefetchAhead(const uint8_t* const (&rec)[NS], int64_t begin, int64_t end, int64_t ahead) {
  if constexpr (NS == 1) {
    for (int64_t o = begin & ~int64_t{63}; o < end; o += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(rec[0] + ahead + o), _MM_HINT_T0);
    }
  } else {
    for (int64_t o = (NS * begin) & ~int64_t{63}; o < NS * end; o += 64) {
      asm volatile("prefetcht0 %0" : : "m"(*(rec[0] + ahead + o)));
    }
  }
}

// A tile's prefetch at one step (32 columns of its strips): a slice of src.next, or, where
// the tile decodes records from memory, its own ahead.
template <int NS, bool kUnpacked>
inline void PrefetchStep(const Sources& src, const uint8_t* const (&rec)[NS], int64_t begin, int64_t end,
                         int64_t ahead) {
  if (src.next != nullptr) return src.next->Step();
  if constexpr (!kUnpacked) PrefetchAhead<NS>(rec, begin, end, ahead);
}

// The 8 vpdpbusd of one 32-column block added into dot: code bytes at rec[j] + off (4 x 64),
// h5[j] their 5th bits (kFifthBit only), xb the activations of the block's column 0.
template <int MR, int NS, Nibbles kMode>
inline void BlockDots(const PackedActs& x, const uint8_t* const (&rec)[NS], int64_t off, const __m512i (&h5)[NS],
                      const int8_t* xb, __m512i (&dot)[MR][NS]) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m512i lut = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(kIq4NlPlus128)));
  // The GEMV's plain codes have their high nibbles dotted where they stand (16 x the code,
  // at most 240: still a u8 for vpdpbusd) on a second chain, whose sum is divided by 16 at
  // the end, exactly, as every term is a multiple of 16: a shift per 64 code bytes saved
  // against 2 instructions per strip and block (a decode pass's linears, decode_pass_bench
  // on a 2-core Zen 5: Q4_K 2-3 % and Q4_0 1-2 % less time, in-process A/B). Tiles of more
  // activation rows (the GEMM) spend more on the end than they save: 5 % slower at M = 16
  // and 512, so they shift.
  constexpr bool kHiInPlace = kMode == Nibbles::kPlain && MR == 1;
  const __m512i high4 = _mm512_set1_epi8(static_cast<char>(0xF0));
  __m512i dot_hi[MR][NS];
  if constexpr (kHiInPlace) Fill(dot_hi, _mm512_setzero_si512());
  #pragma GCC unroll 4
  for (int g = 0; g < 4; ++g) {
    __m512i lo[NS], hi[NS];
    #pragma GCC unroll 4
    for (int j = 0; j < NS; ++j) {
      const __m512i v = _mm512_loadu_si512(rec[j] + off + g * 64);
      lo[j] = _mm512_and_si512(v, low4);
      if constexpr (kHiInPlace) hi[j] = _mm512_and_si512(v, high4);
      else hi[j] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
      if constexpr (kMode == Nibbles::kFifthBit) {
        lo[j] = _mm512_or_si512(lo[j], FifthBitLo(h5[j], g));
        hi[j] = _mm512_or_si512(hi[j], FifthBitHi(h5[j], g));
      } else if constexpr (kMode == Nibbles::kIq4) {
        lo[j] = _mm512_shuffle_epi8(lut, lo[j]);
        hi[j] = _mm512_shuffle_epi8(lut, hi[j]);
      }
    }
    #pragma GCC unroll 4
    for (int m = 0; m < MR; ++m) {
      const __m512i xl = Broadcast4(xb + m * x.k + 4 * g), xh = Broadcast4(xb + m * x.k + 16 + 4 * g);
      #pragma GCC unroll 4
      for (int j = 0; j < NS; ++j) {
        dot[m][j] = _mm512_dpbusd_epi32(dot[m][j], lo[j], xl);
        if constexpr (kHiInPlace) dot_hi[m][j] = _mm512_dpbusd_epi32(dot_hi[m][j], hi[j], xh);
        else dot[m][j] = _mm512_dpbusd_epi32(dot[m][j], hi[j], xh);
      }
    }
  }
  if constexpr (kHiInPlace) {
    #pragma GCC unroll 4
    for (int j = 0; j < NS; ++j) dot[0][j] = _mm512_add_epi32(dot[0][j], _mm512_srai_epi32(dot_hi[0][j], 4));
  }
}

// Q4_K, or Q5_K when kQ5 (the same record plus a plane of 5th bits).
template <int MR, int NS, bool kQ5, bool kUnpacked>
void TileQ4_K(const PackedActs& x, const KQuantPackedWeight& w, const Sources& codes, int64_t m0, int64_t s0,
              const float* bias, float* y) {
  __m512 acc[MR][NS];
  Fill(acc, _mm512_setzero_ps());
  const int64_t ahead = PrefetchDistance<NS>(w, s0, NS * w.record_bytes);
  for (int64_t sb = 0; sb < x.nsb; ++sb) {
    const uint8_t* rec[NS];
    #pragma GCC unroll 4
    for (int j = 0; j < NS; ++j) rec[j] = w.record(s0 + j, sb);
    const int8_t* xb = x.q + m0 * x.k + sb * 256;
    __m512i isum[MR][NS];
    Fill(isum, _mm512_setzero_si512());
    for (int sub = 0; sub < 8; ++sub) {
      __m512i dot[MR][NS];
      Fill(dot, _mm512_setzero_si512());
      PrefetchStep<NS, kUnpacked>(codes, rec, sub * w.record_bytes / 8, (sub + 1) * w.record_bytes / 8, ahead);
      if constexpr (kUnpacked) {
        const uint8_t* c[NS];
        codes.Block<NS>(sb * 8 + sub, c);
        UnpackedDots<MR, NS>(x, c, xb + sub * 32, 0, 8, dot);
      } else {
        __m512i h5[NS];
        if constexpr (kQ5) {
          #pragma GCC unroll 4
          for (int j = 0; j < NS; ++j) h5[j] = Load(rec[j] + kQ5_KQh + sub * 64);
        }
        BlockDots<MR, NS, kQ5 ? Nibbles::kFifthBit : Nibbles::kPlain>(x, rec, sub * 256, h5, xb + sub * 32, dot);
      }
      #pragma GCC unroll 4
      for (int j = 0; j < NS; ++j) {
        const __m512i sc = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(rec[j] + kQ4_KSc + sub * 16)));
        #pragma GCC unroll 4
        for (int m = 0; m < MR; ++m) isum[m][j] = _mm512_add_epi32(isum[m][j], _mm512_mullo_epi32(dot[m][j], sc));
      }
    }
    #pragma GCC unroll 4
    for (int j = 0; j < NS; ++j) {
      __m512i imin[MR];
      #pragma GCC unroll 4
      for (int m = 0; m < MR; ++m) imin[m] = _mm512_setzero_si512();
      #pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) {
        const __m512i mn = _mm512_cvtepu8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(rec[j] + kQ4_KMn + p * 32)));
        #pragma GCC unroll 4
        for (int m = 0; m < MR; ++m) {
          const __m512i pair = _mm512_set1_epi32(x.aux[((m0 + m) * x.nsb + sb) * 16 + p]);
          imin[m] = _mm512_dpwssd_epi32(imin[m], mn, pair);
        }
      }
      const __m512 dw = LoadF16x16(rec[j] + kQ4_KD), dmin = LoadF16x16(rec[j] + kQ4_KDmin);
      #pragma GCC unroll 4
      for (int m = 0; m < MR; ++m) {
        const __m512 dx = _mm512_set1_ps(x.d[(m0 + m) * x.nsb + sb]);
        acc[m][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[m][j]), _mm512_mul_ps(dw, dx), acc[m][j]);
        acc[m][j] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(imin[m]), _mm512_mul_ps(dmin, dx), acc[m][j]);
      }
    }
  }
  Store<MR, NS>(acc, x, w, m0, s0, bias, y);
}

// One 32-column block of Q6_K (sub-blocks 2 blk, 2 blk + 1) into the int32 sums.
template <int MR, int NS, bool kUnpacked>
inline void BlockQ6_K(const PackedActs& x, const uint8_t* const (&rec)[NS], const Sources& codes, const int8_t* xb,
                      int64_t m0, int64_t sb, int blk, __m512i (&isum)[MR][NS]) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  __m512i dot_a[MR][NS], dot_b[MR][NS], ha[NS], hb[NS];
  if constexpr (!kUnpacked) {
    #pragma GCC unroll 4
    for (int j = 0; j < NS; ++j) {
      ha[j] = Load(rec[j] + kQ6_KQh + (blk * 2) * 64);
      hb[j] = Load(rec[j] + kQ6_KQh + (blk * 2 + 1) * 64);
    }
  }
  #pragma GCC unroll 4
  for (int m = 0; m < MR; ++m) {
    const int32_t* aux = x.aux + ((m0 + m) * x.nsb + sb) * 16;
    #pragma GCC unroll 4
    for (int j = 0; j < NS; ++j) {
      dot_a[m][j] = _mm512_set1_epi32(aux[2 * blk]);
      dot_b[m][j] = _mm512_set1_epi32(aux[2 * blk + 1]);
    }
  }
  const auto group = [&]<int G>() {
    __m512i lo[NS], hi[NS];
    #pragma GCC unroll 4
    for (int j = 0; j < NS; ++j) {
      const __m512i v = Load(rec[j] + (blk * 4 + G) * 64);
      lo[j] = _mm512_or_si512(_mm512_and_si512(v, low4), HighBits<G>(ha[j]));
      hi[j] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v, 4), low4), HighBits<G>(hb[j]));
    }
    #pragma GCC unroll 4
    for (int m = 0; m < MR; ++m) {
      const __m512i xl = Broadcast4(xb + m * x.k + blk * 32 + 4 * G);
      const __m512i xh = Broadcast4(xb + m * x.k + blk * 32 + 16 + 4 * G);
      #pragma GCC unroll 4
      for (int j = 0; j < NS; ++j) {
        dot_a[m][j] = _mm512_dpbusd_epi32(dot_a[m][j], lo[j], xl);
        dot_b[m][j] = _mm512_dpbusd_epi32(dot_b[m][j], hi[j], xh);
      }
    }
  };
  if constexpr (kUnpacked) {  // columns 0-15 of the block are its groups 0-3, 16-31 groups 4-7
    const uint8_t* c[NS];
    codes.Block<NS>(sb * 8 + blk, c);
    UnpackedDots<MR, NS>(x, c, xb + blk * 32, 0, 4, dot_a);
    UnpackedDots<MR, NS>(x, c, xb + blk * 32, 4, 8, dot_b);
  } else {
    group.template operator()<0>();
    group.template operator()<1>();
    group.template operator()<2>();
    group.template operator()<3>();
  }
  #pragma GCC unroll 4
  for (int j = 0; j < NS; ++j) {
    const auto* sc = reinterpret_cast<const __m128i*>(rec[j] + kQ6_KSc + blk * 32);
    const __m512i sa = _mm512_cvtepi8_epi32(_mm_load_si128(sc)), sbv = _mm512_cvtepi8_epi32(_mm_load_si128(sc + 1));
    #pragma GCC unroll 4
    for (int m = 0; m < MR; ++m) {
      isum[m][j] = _mm512_add_epi32(isum[m][j], _mm512_mullo_epi32(dot_a[m][j], sa));
      isum[m][j] = _mm512_add_epi32(isum[m][j], _mm512_mullo_epi32(dot_b[m][j], sbv));
    }
  }
}

template <int MR, int NS, bool kUnpacked>
void TileQ6_K(const PackedActs& x, const KQuantPackedWeight& w, const Sources& codes, int64_t m0, int64_t s0,
              const float* bias, float* y) {
  __m512 acc[MR][NS];
  Fill(acc, _mm512_setzero_ps());
  const int64_t ahead = PrefetchDistance<NS>(w, s0, NS * w.record_bytes);
  for (int64_t sb = 0; sb < x.nsb; ++sb) {
    const uint8_t* rec[NS];
    #pragma GCC unroll 4
    for (int j = 0; j < NS; ++j) rec[j] = w.record(s0 + j, sb);
    const int8_t* xb = x.q + m0 * x.k + sb * 256;
    __m512i isum[MR][NS];
    Fill(isum, _mm512_setzero_si512());
    for (int blk = 0; blk < 8; ++blk) {
      PrefetchStep<NS, kUnpacked>(codes, rec, blk * w.record_bytes / 8, (blk + 1) * w.record_bytes / 8, ahead);
      BlockQ6_K<MR, NS, kUnpacked>(x, rec, codes, xb, m0, sb, blk, isum);
    }
    #pragma GCC unroll 4
    for (int j = 0; j < NS; ++j) {
      const __m512 dw = LoadF16x16(rec[j] + kQ6_KD);
      #pragma GCC unroll 4
      for (int m = 0; m < MR; ++m) {
        const __m512 dx = _mm512_set1_ps(x.d[(m0 + m) * x.nsb + sb]);
        acc[m][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[m][j]), _mm512_mul_ps(dw, dx), acc[m][j]);
      }
    }
  }
  Store<MR, NS>(acc, x, w, m0, s0, bias, y);
}

// Q4_0, Q5_0, IQ4_NL or Q4_Z against q8_0 activations: per block of 32 the dot starts at the
// centring term (-8 / -16 / -z * sum(x), or -128 * sum(x) for IQ4_NL's codes looked up as
// value + 128), then one fp32 fma with d_w * d_x. Q4_1 / Q5_1: the dot of the raw codes
// (from 0), its fma, then a second one adds sum(x) * (m_w * d_x).
template <int MR, int NS, DType kType, bool kUnpacked>
void TileBlock32(const PackedActs& x, const KQuantPackedWeight& w, const Sources& codes, int64_t m0, int64_t s0,
                 const float* bias, float* y) {
  constexpr bool kAffine = Block32IsAffine(kType);
  constexpr int kShift = kType == DType::kQ4_0 ? 4 : kType == DType::kQ5_0 ? 3 : 0;
  __m512 acc[MR][NS];
  Fill(acc, _mm512_setzero_ps());
  const int64_t ahead = PrefetchDistance<NS>(w, s0, kBlock32Ahead);
  for (int64_t b = 0; b < x.nsb; ++b) {
    const uint8_t* rec[NS];
    #pragma GCC unroll 4
    for (int j = 0; j < NS; ++j) rec[j] = w.record(s0 + j, b);
    const int8_t* xb = x.q + m0 * x.k + b * 32;
    PrefetchStep<NS, kUnpacked>(codes, rec, 0, w.record_bytes, ahead);
    __m512i dot[MR][NS], h5[NS];
    if constexpr (kType == DType::kQ4_Z) {  // -z * sum(x), z per row from the group's params
      __m512i z[NS];
      #pragma GCC unroll 4
      for (int j = 0; j < NS; ++j) {
        z[j] = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.params(s0 + j, b) + kQ4_ZParamZ)));
      }
      #pragma GCC unroll 4
      for (int m = 0; m < MR; ++m) {
        const __m512i neg_sum = _mm512_set1_epi32(x.aux[(m0 + m) * x.nsb + b] / 128);
        #pragma GCC unroll 4
        for (int j = 0; j < NS; ++j) dot[m][j] = _mm512_mullo_epi32(z[j], neg_sum);
      }
    } else if constexpr (kAffine) {
      Fill(dot, _mm512_setzero_si512());
    } else {
      #pragma GCC unroll 4
      for (int m = 0; m < MR; ++m) {
        const __m512i corr = _mm512_srai_epi32(_mm512_set1_epi32(x.aux[(m0 + m) * x.nsb + b]), kShift);
        #pragma GCC unroll 4
        for (int j = 0; j < NS; ++j) dot[m][j] = corr;
      }
    }
    if constexpr (kUnpacked) {
      const uint8_t* c[NS];
      codes.Block<NS>(b, c);
      UnpackedDots<MR, NS>(x, c, xb, 0, 8, dot);
    } else {
      if constexpr (Block32HasFifthBit(kType)) {
        #pragma GCC unroll 4
        for (int j = 0; j < NS; ++j) h5[j] = _mm512_loadu_si512(rec[j] + kQ5_0Qh);
      }
      constexpr Nibbles kMode = Block32HasFifthBit(kType) ? Nibbles::kFifthBit
                                : kType == DType::kIQ4_NL ? Nibbles::kIq4
                                                          : Nibbles::kPlain;
      BlockDots<MR, NS, kMode>(x, rec, 0, h5, xb, dot);
    }
    #pragma GCC unroll 4
    for (int j = 0; j < NS; ++j) {
      const uint8_t* d_w = kType == DType::kQ4_Z ? w.params(s0 + j, b) : rec[j] + Block32D(kType);
      const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(d_w)));
      #pragma GCC unroll 4
      for (int m = 0; m < MR; ++m) {
        const __m512 dx = _mm512_set1_ps(x.d[(m0 + m) * x.nsb + b]);
        acc[m][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[m][j]), _mm512_mul_ps(dw, dx), acc[m][j]);
      }
      if constexpr (kAffine) {  // sum(x) = aux / -128 exactly
        const __m512 mw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec[j] + Block32M(kType))));
        #pragma GCC unroll 4
        for (int m = 0; m < MR; ++m) {
          const __m512 dx = _mm512_set1_ps(x.d[(m0 + m) * x.nsb + b]);
          const __m512 sum = _mm512_set1_ps(static_cast<float>(x.aux[(m0 + m) * x.nsb + b] / -128));
          acc[m][j] = _mm512_fmadd_ps(sum, _mm512_mul_ps(mw, dx), acc[m][j]);
        }
      }
    }
  }
  Store<MR, NS>(acc, x, w, m0, s0, bias, y);
}

// IQ4_XS: table values + 128 (vpshufb) from -128 * the sub-block sums, signed sub-block
// scales, one fp32 fma per super-block.
template <int MR, int NS, bool kUnpacked>
void TileIq4Xs(const PackedActs& x, const KQuantPackedWeight& w, const Sources& codes, int64_t m0, int64_t s0,
               const float* bias, float* y) {
  __m512 acc[MR][NS];
  Fill(acc, _mm512_setzero_ps());
  const int64_t ahead = PrefetchDistance<NS>(w, s0, NS * w.record_bytes);
  for (int64_t sb = 0; sb < x.nsb; ++sb) {
    const uint8_t* rec[NS];
    #pragma GCC unroll 4
    for (int j = 0; j < NS; ++j) rec[j] = w.record(s0 + j, sb);
    const int8_t* xb = x.q + m0 * x.k + sb * 256;
    __m512i isum[MR][NS];
    Fill(isum, _mm512_setzero_si512());
    for (int sub = 0; sub < 8; ++sub) {
      PrefetchStep<NS, kUnpacked>(codes, rec, sub * w.record_bytes / 8, (sub + 1) * w.record_bytes / 8, ahead);
      __m512i dot[MR][NS];
      #pragma GCC unroll 4
      for (int m = 0; m < MR; ++m) {
        const __m512i corr = _mm512_set1_epi32(x.aux[((m0 + m) * x.nsb + sb) * 16 + sub]);
        #pragma GCC unroll 4
        for (int j = 0; j < NS; ++j) dot[m][j] = corr;
      }
      if constexpr (kUnpacked) {
        const uint8_t* c[NS];
        codes.Block<NS>(sb * 8 + sub, c);
        UnpackedDots<MR, NS>(x, c, xb + sub * 32, 0, 8, dot);
      } else {
        const __m512i none[NS] = {};
        BlockDots<MR, NS, Nibbles::kIq4>(x, rec, sub * 256, none, xb + sub * 32, dot);
      }
      #pragma GCC unroll 4
      for (int j = 0; j < NS; ++j) {
        const __m512i sc = _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(rec[j] + kIq4XsSc + sub * 16)));
        #pragma GCC unroll 4
        for (int m = 0; m < MR; ++m) isum[m][j] = _mm512_add_epi32(isum[m][j], _mm512_mullo_epi32(dot[m][j], sc));
      }
    }
    #pragma GCC unroll 4
    for (int j = 0; j < NS; ++j) {
      const __m512 dw = LoadF16x16(rec[j] + kIq4XsD);
      #pragma GCC unroll 4
      for (int m = 0; m < MR; ++m) {
        const __m512 dx = _mm512_set1_ps(x.d[(m0 + m) * x.nsb + sb]);
        acc[m][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[m][j]), _mm512_mul_ps(dw, dx), acc[m][j]);
      }
    }
  }
  Store<MR, NS>(acc, x, w, m0, s0, bias, y);
}

// One tile of NS strips of w's type.
template <int MR, int NS, bool kU>
void TileOf(const PackedActs& x, const KQuantPackedWeight& w, const Sources& c, int64_t m0, int64_t s, const float* bias,
            float* y) {
  switch (w.dtype) {
    case DType::kQ4_K: return TileQ4_K<MR, NS, false, kU>(x, w, c, m0, s, bias, y);
    case DType::kQ5_K: return TileQ4_K<MR, NS, true, kU>(x, w, c, m0, s, bias, y);
    case DType::kQ6_K: return TileQ6_K<MR, NS, kU>(x, w, c, m0, s, bias, y);
    case DType::kIQ4_XS: return TileIq4Xs<MR, NS, kU>(x, w, c, m0, s, bias, y);
    case DType::kQ4_0: return TileBlock32<MR, NS, DType::kQ4_0, kU>(x, w, c, m0, s, bias, y);
    case DType::kQ5_0: return TileBlock32<MR, NS, DType::kQ5_0, kU>(x, w, c, m0, s, bias, y);
    case DType::kQ4_1: return TileBlock32<MR, NS, DType::kQ4_1, kU>(x, w, c, m0, s, bias, y);
    case DType::kQ5_1: return TileBlock32<MR, NS, DType::kQ5_1, kU>(x, w, c, m0, s, bias, y);
    case DType::kQ4_Z: return TileBlock32<MR, NS, DType::kQ4_Z, kU>(x, w, c, m0, s, bias, y);
    default: return TileBlock32<MR, NS, DType::kIQ4_NL, kU>(x, w, c, m0, s, bias, y);
  }
}

// The GEMV (one activation row) takes 4 strips at a time, as the Q8_0 kernel does: more
// independent loads in flight keep the memory busy. With 2, a 2-core Zen 5 streamed Q4_K
// and Q6_K at half the Q8_0 kernel's bytes per second; with 4, Q4_K ~30 % and Q6_K ~35 %
// faster (kernel_bench --m 1, lm_head shape, one thread). Tiles of 3-4 rows take 2 strips:
// with one, a 32-column group cost 9 loads (the code bytes and 8 activation broadcasts) per
// 8 vpdpbusd, more than the two load ports keep up with; with two, 10 per 16 (30 of the 32
// registers). A 0.6B model's linears in Q4_K_M, 2-core Zen 5, in-process A/B: 16 rows
// 9 % less time, 64 rows 9 %, 512 rows 6 %.
template <int MR>
void TileRow(const PackedActs& x, const KQuantPackedWeight& w, const Sources& src, int64_t m0, int64_t s_begin,
             int64_t s_end, const float* bias, float* y) {
  constexpr int kNs = MR == 1 ? 4 : 2;
  int64_t s = s_begin;
  for (; s + kNs <= s_end; s += kNs) TileOf<MR, kNs, false>(x, w, src, m0, s, bias, y);
  for (; s < s_end; ++s) TileOf<MR, 1, false>(x, w, src, m0, s, bias, y);
}

// tile.template operator()<MR>(m0) for every tile of up to 4 activation rows, MR its rows.
template <class Tile>
void ForRowTiles(int64_t num_rows, const Tile& tile) {
  for (int64_t m0 = 0; m0 < num_rows; m0 += kMaxTileRows) {
    switch (std::min<int64_t>(kMaxTileRows, num_rows - m0)) {
      case 1: tile.template operator()<1>(m0); break;
      case 2: tile.template operator()<2>(m0); break;
      case 3: tile.template operator()<3>(m0); break;
      default: tile.template operator()<kMaxTileRows>(m0); break;
    }
  }
}

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

// Whether a GEMM of num_rows rows unpacks w's codes once per call (one byte per weight)
// instead of decoding the records in every tile of 4 rows. The unpacked tile loads twice the
// code bytes, so it pays where decoding costs more than loading: measured on a 2-core Zen 5,
// in-process alternating calls, Qwen3-0.6B's shapes (time unpacked / decoded per tile):
// - Q6_K, Q5_K, Q5_0 (top bits or 5th bits or-ed in): 8 rows 1.00-1.09, 16 rows 0.76-0.89,
//   48 rows 0.71-0.78, 512 rows 0.61-0.65;
// - Q4_K, Q4_0, Q4_Z, IQ4_XS (a mask and a shift, or a lookup): 8 rows 1.08-1.33, 16 rows
//   0.96-1.25, 32 rows 0.99-1.07, 48 rows 0.81-0.96, 512 rows 0.79-0.96.
// PAGELLM_KQUANT_UNPACK=0 decodes in every tile (A/B runs); the results are the same floats.
bool UnpackForGemm(DType dtype, int64_t num_rows) {
  static const bool enabled = [] {
    const char* env = std::getenv("PAGELLM_KQUANT_UNPACK");
    return env == nullptr || std::string_view(env) != "0";
  }();
  const bool heavy = dtype == DType::kQ6_K || dtype == DType::kQ5_K || dtype == DType::kQ5_0 || dtype == DType::kQ5_1;
  return enabled && num_rows >= (heavy ? 16 : 48);
}

}  // namespace

const uint8_t* UnpackStripsAvx512(const KQuantPackedWeight& w, int64_t s_begin, int64_t s_end) {
  thread_local std::unique_ptr<uint8_t, FreeDeleter> buffer;
  thread_local int64_t buffer_bytes = 0;
  const int64_t strip_bytes = kKQuantPackRows * w.k, need = (s_end - s_begin) * strip_bytes;
  if (need > buffer_bytes) {
    buffer.reset(static_cast<uint8_t*>(std::aligned_alloc(64, static_cast<size_t>((need + 63) / 64 * 64))));
    PAGELLM_CHECK(buffer != nullptr);
    buffer_bytes = need;
  }
  for (int64_t s = s_begin; s < s_end; ++s) {
    uint8_t* out = buffer.get() + (s - s_begin) * strip_bytes;
    switch (w.dtype) {
      case DType::kQ4_K: UnpackStrip<DType::kQ4_K>(w, s, out); break;
      case DType::kQ5_K: UnpackStrip<DType::kQ5_K>(w, s, out); break;
      case DType::kQ6_K: UnpackStrip<DType::kQ6_K>(w, s, out); break;
      case DType::kIQ4_XS: UnpackStrip<DType::kIQ4_XS>(w, s, out); break;
      case DType::kQ5_0: UnpackStrip<DType::kQ5_0>(w, s, out); break;
      case DType::kQ5_1: UnpackStrip<DType::kQ5_1>(w, s, out); break;
      case DType::kIQ4_NL: UnpackStrip<DType::kIQ4_NL>(w, s, out); break;
      default: UnpackStrip<DType::kQ4_0>(w, s, out); break;  // Q4_0, Q4_1, Q4_Z: plain nibbles
    }
  }
  return buffer.get();
}

void StripsAvx512(const PackedActs& x, const KQuantPackedWeight& w, int64_t s_begin, int64_t s_end,
                  const float* bias, float* y, const Lookahead& next) {
  const bool lookahead = next.on && next.w != nullptr;
  const int64_t row_tiles = (x.num_rows + kMaxTileRows - 1) / kMaxTileRows;
  const int64_t steps_per_tile = w.k / 32;  // PrefetchStep calls of one tile over all of k
  if (!UnpackForGemm(w.dtype, x.num_rows)) {
    // The first tile of rows reads the item's records from memory (prefetching its own
    // ahead); the others read them from the cache and prefetch the next item's meanwhile.
    const int64_t tiles_per_row = (s_end - s_begin + 1) / 2;
    std::optional<StreamPrefetch> ahead;
    if (lookahead && row_tiles > 1) {
      ahead.emplace(StripRecords(*next.w, next.s_begin, next.s_end), (row_tiles - 1) * tiles_per_row * steps_per_tile);
    }
    return ForRowTiles(x.num_rows, [&]<int MR>(int64_t m0) {
      const Sources src{.next = m0 > 0 && ahead ? &*ahead : nullptr};
      TileRow<MR>(x, w, src, m0, s_begin, s_end, bias, y);
    });
  }
  // A GEMM decodes each record once, into one byte per weight, instead of once per tile of
  // 4 rows: two strips at a time, which every tile of rows then reads from the L1 (32 KB
  // at k = 1024), prefetching the records of the two strips it unpacks next.
  const int64_t strip_bytes = kKQuantPackRows * w.k;
  for (int64_t s = s_begin; s < s_end; s += 2) {
    const int64_t e = std::min(s + 2, s_end);
    std::optional<StreamPrefetch> ahead;
    if (next.on) {
      if (e < s_end) {
        ahead.emplace(StripRecords(w, e, std::min(e + 2, s_end)), row_tiles * steps_per_tile);
      } else if (next.w != nullptr) {
        ahead.emplace(StripRecords(*next.w, next.s_begin, std::min(next.s_begin + 2, next.s_end)),
                      row_tiles * steps_per_tile);
      }
    }
    const Sources c{.first = UnpackStripsAvx512(w, s, e), .strip_bytes = strip_bytes, .next = ahead ? &*ahead : nullptr};
    if (e - s == 2) {
      ForRowTiles(x.num_rows, [&]<int MR>(int64_t m0) { TileOf<MR, 2, true>(x, w, c, m0, s, bias, y); });
    } else {
      ForRowTiles(x.num_rows, [&]<int MR>(int64_t m0) { TileOf<MR, 1, true>(x, w, c, m0, s, bias, y); });
    }
  }
}

}  // namespace pagellm::kquant_packed

#pragma GCC pop_options
