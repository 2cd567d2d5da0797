#include "backend/cpu/packed_rows.h"

#include <cstring>
#include <type_traits>

#include "backend/cpu/kquant_packed_kernels.h"
#include "common/status.h"
#include "tensor/half.h"
#include "tensor/kquant_blocks.h"

namespace pagellm {
namespace {

using namespace kquant_packed;

// The packed side (kquant_packed.h): column c (0..31) of a 32-column chunk whose nibble
// bytes start at q ([4 g][16 rows][4]) sits in byte g = (c % 16) / 4, i = c % 4 of row r,
// low nibble for c < 16; a plane of 5th bits ([16 rows][4]) keeps it in bit g (c < 16) or
// 4 + g; Q6_K's planes of top bits, one per half of the chunk, in bits 2g, 2g + 1.
int PackedNibble(const uint8_t* q, int64_t r, int c) {
  const uint8_t byte = q[((c % 16) / 4) * 64 + r * 4 + c % 4];
  return c < 16 ? byte & 0x0F : byte >> 4;
}
int PackedFifthBit(const uint8_t* qh, int64_t r, int c) {
  const int g = (c % 16) / 4;
  return (qh[r * 4 + c % 4] >> (c < 16 ? g : 4 + g)) & 1;
}
int PackedQ6_KTop(const uint8_t* rec, int64_t r, int blk, int c) {
  const uint8_t byte = rec[kQ6_KQh + (blk * 2 + (c < 16 ? 0 : 1)) * 64 + r * 4 + c % 4];
  return (byte >> (2 * ((c % 16) / 4))) & 3;
}
uint16_t PackedF16(const uint8_t* rec, int64_t offset, int64_t r) {
  uint16_t v;
  std::memcpy(&v, rec + offset + 2 * r, 2);
  return v;
}

// The file side (tensor/kquant_blocks.h), the inverse of the *Code accessors there; the
// blocks start zeroed.
template <typename Block>
void RebuildQ4_K(const uint8_t* rec, int64_t r, Block* b) {
  constexpr bool kQ5 = std::is_same_v<Block, BlockQ5_K>;
  uint8_t sc[8], mn[8];
  for (int sub = 0; sub < 8; ++sub) {
    sc[sub] = rec[kQ4_KSc + sub * 16 + r];
    mn[sub] = rec[kQ4_KMn + (sub / 2) * 32 + r * 2 + sub % 2];
    for (int c = 0; c < 32; ++c) {
      const int i = 32 * sub + c;  // element of the block
      const int code = PackedNibble(rec + sub * 4 * 64, r, c);
      b->qs[(i / 64) * 32 + i % 32] |= static_cast<uint8_t>(code << ((i % 64) < 32 ? 0 : 4));
      if constexpr (kQ5) {
        const int bit = PackedFifthBit(rec + kQ5_KQh + sub * 64, r, c);
        b->qh[i % 32] |= static_cast<uint8_t>(bit << (2 * (i / 64) + ((i % 64) < 32 ? 0 : 1)));
      }
    }
  }
  // GetScaleMinK4's packing: pairs 0..3 in the low 6 bits of bytes j (scale) and j + 4
  // (min); pairs 4..7 as nibbles of byte j + 4 with their top 2 bits over bytes j - 4, j.
  for (int j = 0; j < 4; ++j) {
    b->scales[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    b->scales[j + 4] = static_cast<uint8_t>(mn[j] | ((mn[j + 4] >> 4) << 6));
    b->scales[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0x0F) | ((mn[j + 4] & 0x0F) << 4));
  }
  b->d = PackedF16(rec, kQ4_KD, r);
  b->dmin = PackedF16(rec, kQ4_KDmin, r);
}

void RebuildQ6_K(const uint8_t* rec, int64_t r, BlockQ6_K* b) {
  for (int blk = 0; blk < 8; ++blk) {
    for (int c = 0; c < 32; ++c) {
      const int i = 32 * blk + c;
      const int code = PackedNibble(rec + blk * 4 * 64, r, c) | (PackedQ6_KTop(rec, r, blk, c) << 4);
      const int half = i / 128, k = (i % 128) / 32, l = i % 32;
      b->ql[64 * half + l + 32 * (k & 1)] |= static_cast<uint8_t>((code & 0x0F) << (k < 2 ? 0 : 4));
      b->qh[32 * half + l] |= static_cast<uint8_t>((code >> 4) << (2 * k));
    }
  }
  for (int sub = 0; sub < 16; ++sub) b->scales[sub] = static_cast<int8_t>(rec[kQ6_KSc + sub * 16 + r]);
  b->d = PackedF16(rec, kQ6_KD, r);
}

void RebuildIq4Xs(const uint8_t* rec, int64_t r, BlockIq4Xs* b) {
  for (int sub = 0; sub < 8; ++sub) {
    const int ls = static_cast<int8_t>(rec[kIq4XsSc + sub * 16 + r]) + 32;
    b->scales_l[sub / 2] |= static_cast<uint8_t>((ls & 0x0F) << (4 * (sub % 2)));
    b->scales_h = static_cast<uint16_t>(b->scales_h | ((ls >> 4) << (2 * sub)));
    for (int c = 0; c < 32; ++c) {
      b->qs[16 * sub + c % 16] |= static_cast<uint8_t>(PackedNibble(rec + sub * 4 * 64, r, c) << (c < 16 ? 0 : 4));
    }
  }
  b->d = PackedF16(rec, kIq4XsD, r);
}

// Q4_0, IQ4_NL, Q5_0, Q4_1, Q5_1: byte j of qs holds element j (low) and j + 16 (high).
template <DType kType, typename Block>
void RebuildBlock32(const uint8_t* rec, int64_t r, Block* b) {
  for (int c = 0; c < 32; ++c) {
    b->qs[c % 16] |= static_cast<uint8_t>(PackedNibble(rec, r, c) << (c < 16 ? 0 : 4));
    if constexpr (Block32HasFifthBit(kType)) {
      b->qh[c / 8] |= static_cast<uint8_t>(PackedFifthBit(rec + kQ5_0Qh, r, c) << (c % 8));
    }
  }
  b->d = PackedF16(rec, Block32D(kType), r);
  if constexpr (Block32IsAffine(kType)) b->m = PackedF16(rec, Block32M(kType), r);
}

template <typename Block, typename Rebuild>
void DequantizeRecords(const KQuantPackedWeight& w, int64_t row, int64_t block_elems, Rebuild rebuild, float* out) {
  const int64_t s = row / kKQuantPackRows, r = row % kKQuantPackRows;
  for (int64_t sb = 0; sb < w.nsb; ++sb) {
    Block b{};
    rebuild(w.record(s, sb), r, &b);
    DequantizeRowKQuant(w.dtype, &b, block_elems, out + sb * block_elems);
  }
}

}  // namespace

void DequantizePackedRow(const KQuantPackedWeight& w, int64_t row, float* out) {
  PAGELLM_CHECK(row >= 0 && row < w.n && PackedRowReadable(w));
  switch (w.dtype) {
    case DType::kQ4_K: return DequantizeRecords<BlockQ4_K>(w, row, 256, RebuildQ4_K<BlockQ4_K>, out);
    case DType::kQ5_K: return DequantizeRecords<BlockQ5_K>(w, row, 256, RebuildQ4_K<BlockQ5_K>, out);
    case DType::kQ6_K: return DequantizeRecords<BlockQ6_K>(w, row, 256, RebuildQ6_K, out);
    case DType::kIQ4_XS: return DequantizeRecords<BlockIq4Xs>(w, row, 256, RebuildIq4Xs, out);
    case DType::kQ4_0: return DequantizeRecords<BlockQ4_0>(w, row, 32, RebuildBlock32<DType::kQ4_0, BlockQ4_0>, out);
    case DType::kIQ4_NL:
      return DequantizeRecords<BlockIq4Nl>(w, row, 32, RebuildBlock32<DType::kIQ4_NL, BlockIq4Nl>, out);
    case DType::kQ5_0: return DequantizeRecords<BlockQ5_0>(w, row, 32, RebuildBlock32<DType::kQ5_0, BlockQ5_0>, out);
    case DType::kQ4_1: return DequantizeRecords<BlockQ4_1>(w, row, 32, RebuildBlock32<DType::kQ4_1, BlockQ4_1>, out);
    case DType::kQ5_1: return DequantizeRecords<BlockQ5_1>(w, row, 32, RebuildBlock32<DType::kQ5_1, BlockQ5_1>, out);
    default: PAGELLM_CHECK(false);
  }
}

void DequantizePackedRow(const Q8_0PackedWeight& w, int64_t row, float* out) {
  PAGELLM_CHECK(row >= 0 && row < w.n);
  const int64_t s = row / kQ8_0PackRows, r = row % kQ8_0PackRows;
  for (int64_t b = 0; b < w.nb; ++b) {
    // qs [s][b][8 groups][16 rows][4] as w + 128; d [s][b][16].
    const uint8_t* q = w.qs.get() + (s * w.nb + b) * kQ8_0PackQsBytes;
    BlockQ8_0 block;
    block.d = w.d.get()[(s * w.nb + b) * kQ8_0PackRows + r];
    for (int c = 0; c < kQ8_0BlockElements; ++c) {
      block.qs[c] = static_cast<int8_t>(q[(c / 4) * 64 + r * 4 + c % 4] ^ 0x80);
    }
    DequantizeRowQ8_0(&block, kQ8_0BlockElements, out + b * kQ8_0BlockElements);
  }
}

void DequantizePackedRow(const Bf16PackedWeight& w, int64_t row, float* out) {
  PAGELLM_CHECK(row >= 0 && row < w.n);
  // data [s][pair][16 rows][2]
  const uint16_t* strip = w.data.get() + (row / kBf16PackRows) * w.strip_stride() + (row % kBf16PackRows) * 2;
  for (int64_t c = 0; c < w.k; ++c) out[c] = Bf16ToF32(strip[(c / 2) * 2 * kBf16PackRows + c % 2]);
}

}  // namespace pagellm
