// llama.cpp's k-quant blocks Q4_K, Q5_K, Q6_K and IQ4_XS and the 32-value blocks Q4_0, Q5_0,
// Q4_1, Q5_1 and IQ4_NL (ggml-common.h), byte for byte, and their dequantization (ggml-quants.c
// dequantize_row_*, the same float operations in the same order, so the values are
// bit-identical to llama.cpp's).
//
//   const auto* rows = static_cast<const BlockQ6_K*>(table.data);      // [V, H / 256]
//   DequantizeRowQ6_K(rows + id * (H / 256), H, out);
//
// Q4_K: value = d * sc_j * q - dmin * m_j, q 0..15, 8 sub-blocks j of 32 with 6-bit
// (sc_j, m_j) packed in scales[12] (GetScaleMinK4). qs is 4 chunks of 32 bytes: byte l of
// chunk c holds element 64c + l (low nibble) and 64c + 32 + l (high nibble).
// Q6_K: value = d * scales[i / 16] * (q - 32), q 0..63 from 4 bits of ql and 2 of qh
// (Q6_KCode); 16 sub-blocks of 16 with int8 scales.
// Q4_0 / Q5_0 / IQ4_NL: value = d * v(code): code - 8, code - 16 (5 bits), kIq4NlValues[code];
// byte j of qs holds element j (low nibble) and j + 16 (high nibble).
// Q4_1 / Q5_1: affine, value = d * code + m with Q4_0's / Q5_0's uncentred codes (0..15 / 0..31).
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace pagellm {

struct BlockQ4_K {
  uint16_t d;     // fp16 super-block scale of the sub-block scales
  uint16_t dmin;  // fp16 super-block scale of the sub-block mins
  uint8_t scales[12];
  uint8_t qs[128];
};
static_assert(sizeof(BlockQ4_K) == kQ4_KBlockBytes, "block_q4_K must be 144 bytes");

// Q5_K: as Q4_K plus a 5th bit per code: element 64c + l takes bit 2c of qh[l], element
// 64c + 32 + l bit 2c + 1 (l < 32).
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[32];
  uint8_t qs[128];
};
static_assert(sizeof(BlockQ5_K) == 176, "block_q5_K must be 176 bytes");

struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ4_0) == 18, "block_q4_0 must be 18 bytes");

struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];  // bit j (little-endian u32) = 5th bit of element j
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ5_0) == 22, "block_q5_0 must be 22 bytes");

struct BlockQ4_1 {
  uint16_t d;  // fp16 scale
  uint16_t m;  // fp16 offset (the block's minimum)
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ4_1) == 20, "block_q4_1 must be 20 bytes");

struct BlockQ5_1 {
  uint16_t d;     // fp16
  uint16_t m;     // fp16
  uint8_t qh[4];  // bit j (little-endian u32) = 5th bit of element j
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ5_1) == 24, "block_q5_1 must be 24 bytes");

// ggml's kvalues_iq4nl: the 16 non-uniform levels of IQ4_NL / IQ4_XS.
inline constexpr int8_t kIq4NlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

// Q4_Z: pagellm's own block for the int4 checkpoints of Hugging Face (AWQ, GPTQ,
// compressed-tensors pack-quantized): value = d * (code - z), code 0..15 in Q4_0's nibble
// order, z the integer zero point 0..15 of the checkpoint's group (8 for symmetric formats).
// A group of G columns (G a multiple of 32) repeats its (d, z) in each of its G / 32 blocks,
// so any group size maps onto it losslessly (fp16 scales as those formats store them).
struct BlockQ4_Z {
  uint16_t d;  // fp16
  uint8_t z;
  uint8_t reserved;  // 0
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ4_Z) == 20, "BlockQ4_Z must be 20 bytes");

// Q8_S: int8 codes with an fp32 scale, value = d * q; a per-output-channel int8 weight
// (compressed-tensors W8A8) repeats its row's scale in every block, any float scale exactly.
// Backends run it as W8A8 (dynamic per-token int8 activations), which needs that repetition.
struct BlockQ8_S {
  float d;
  int8_t qs[32];
};
static_assert(sizeof(BlockQ8_S) == 36, "BlockQ8_S must be 36 bytes");

// The per-row scales of n rows of k / 32 Q8_S blocks (scale[n]), or false when some row's
// blocks do not share one scale.
bool Q8_SRowScales(const BlockQ8_S* w, int64_t n, int64_t k, float* scale);

void DequantizeRowQ8_S(const BlockQ8_S* in, int64_t k, float* out);

// IQ4_NL has Q4_0's bytes; only the meaning of a code differs.
using BlockIq4Nl = BlockQ4_0;

// The 4-bit code of element i (0..31) of a 32-value block's qs, and its 5th bit in qh.
inline int Nibble32(const uint8_t (&qs)[16], int i) { return i < 16 ? qs[i] & 0x0F : qs[i - 16] >> 4; }
inline int FifthBit32(const uint8_t (&qh)[4], int i) { return (qh[i / 8] >> (i % 8)) & 1; }

// The code of element i (0..31) of a Q4_0 / IQ4_NL / Q4_Z / Q4_1 block (4 bits) or a Q5_0 /
// Q5_1 block (5 bits).
inline int Q4_0Code(const BlockQ4_0& b, int i) { return Nibble32(b.qs, i); }
inline int Q4_ZCode(const BlockQ4_Z& b, int i) { return Nibble32(b.qs, i); }
inline int Q4_1Code(const BlockQ4_1& b, int i) { return Nibble32(b.qs, i); }
inline int Q5_0Code(const BlockQ5_0& b, int i) { return Nibble32(b.qs, i) | (FifthBit32(b.qh, i) << 4); }
inline int Q5_1Code(const BlockQ5_1& b, int i) { return Nibble32(b.qs, i) | (FifthBit32(b.qh, i) << 4); }

// IQ4_XS: 8 sub-blocks of 32, each IQ4_NL-coded (Q4_0's nibble order within the sub-block)
// with a 6-bit scale ls: value = d * (ls - 32) * kIq4NlValues[code].
struct BlockIq4Xs {
  uint16_t d;
  uint16_t scales_h;   // bits 2j..2j+1: top 2 bits of ls_j
  uint8_t scales_l[4];  // nibble j % 2 of byte j / 2: low 4 bits of ls_j
  uint8_t qs[128];
};
static_assert(sizeof(BlockIq4Xs) == 136, "block_iq4_xs must be 136 bytes");

inline int Iq4XsCode(const BlockIq4Xs& b, int i) {
  const int j = i % 32;
  const uint8_t byte = b.qs[16 * (i / 32) + j % 16];
  return j < 16 ? byte & 0x0F : byte >> 4;
}
// ls_j - 32 of sub-block j (0..7), in [-32, 31].
inline int Iq4XsScale(const BlockIq4Xs& b, int j) {
  return (((b.scales_l[j / 2] >> (4 * (j % 2))) & 0x0F) | (((b.scales_h >> (2 * j)) & 3) << 4)) - 32;
}

struct BlockQ6_K {
  uint8_t ql[128];  // low 4 bits
  uint8_t qh[64];   // high 2 bits
  int8_t scales[16];
  uint16_t d;  // fp16
};
static_assert(sizeof(BlockQ6_K) == kQ6_KBlockBytes, "block_q6_K must be 210 bytes");

// llama.cpp's get_scale_min_k4: the j-th (0..7) 6-bit scale and min of a Q4_K/Q5_K block.
void GetScaleMinK4(int j, const uint8_t* scales, uint8_t* scale, uint8_t* min);

// Element i (0..255) of a Q4_K block: its 4-bit code.
inline int Q4_KCode(const BlockQ4_K& b, int i) {
  const uint8_t byte = b.qs[(i / 64) * 32 + i % 32];
  return (i % 64) < 32 ? byte & 0x0F : byte >> 4;
}

// Element i (0..255) of a Q5_K block: its 5-bit code.
inline int Q5_KCode(const BlockQ5_K& b, int i) {
  const uint8_t byte = b.qs[(i / 64) * 32 + i % 32];
  const int low = (i % 64) < 32 ? byte & 0x0F : byte >> 4;
  const int bit = 2 * (i / 64) + ((i % 64) < 32 ? 0 : 1);
  return low | (((b.qh[i % 32] >> bit) & 1) << 4);
}

// Element i (0..255) of a Q6_K block: its 6-bit code (0..63; the value is centred on 32).
// In each half of 128, element 32k + l (k = 0..3) takes its low 4 bits from ql[l + 32 (k & 1)]
// (low nibble for k < 2) and its top 2 from bits 2k..2k+1 of qh[l].
inline int Q6_KCode(const BlockQ6_K& b, int i) {
  const int half = i / 128, k = (i % 128) / 32, l = i % 32;
  const uint8_t low_byte = b.ql[64 * half + l + 32 * (k & 1)];
  const int low = k < 2 ? low_byte & 0x0F : low_byte >> 4;
  return low | (((b.qh[32 * half + l] >> (2 * k)) & 3) << 4);
}

// in [k / 256] blocks -> out [k]. Precondition: k % 256 == 0.
void DequantizeRowQ4_K(const BlockQ4_K* in, int64_t k, float* out);
void DequantizeRowQ5_K(const BlockQ5_K* in, int64_t k, float* out);
void DequantizeRowQ6_K(const BlockQ6_K* in, int64_t k, float* out);

// in [k / 32] blocks -> out [k]. Precondition: k % 32 == 0.
void DequantizeRowQ4_0(const BlockQ4_0* in, int64_t k, float* out);
void DequantizeRowQ5_0(const BlockQ5_0* in, int64_t k, float* out);
void DequantizeRowQ4_1(const BlockQ4_1* in, int64_t k, float* out);
void DequantizeRowQ5_1(const BlockQ5_1* in, int64_t k, float* out);
void DequantizeRowIq4Nl(const BlockIq4Nl* in, int64_t k, float* out);
void DequantizeRowQ4_Z(const BlockQ4_Z* in, int64_t k, float* out);
// in [k / 256] blocks -> out [k].
void DequantizeRowIq4Xs(const BlockIq4Xs* in, int64_t k, float* out);

// A row of k values of a packed-quant dtype (IsPackedQuant) at `in` -> out [k].
void DequantizeRowKQuant(DType dtype, const void* in, int64_t k, float* out);

// The block types the backends run natively on their int8 kernels (besides kQ8_0):
// kQ4_K, kQ5_K, kQ6_K, kIQ4_XS, kQ4_0, kQ5_0, kQ4_1, kQ5_1, kIQ4_NL, kQ4_Z.
inline bool IsPackedQuant(DType dtype) {
  return dtype == DType::kQ4_K || dtype == DType::kQ5_K || dtype == DType::kQ6_K || dtype == DType::kIQ4_XS ||
         dtype == DType::kQ4_0 || dtype == DType::kQ5_0 || dtype == DType::kQ4_1 || dtype == DType::kQ5_1 ||
         dtype == DType::kIQ4_NL || dtype == DType::kQ4_Z;
}

}  // namespace pagellm
