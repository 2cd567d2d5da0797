// Internals of RunKQuantPacked (kquant_packed.h): the quantized activations and the
// per-ISA kernels that kquant_packed.cc drives over OpenMP work items.
#pragma once

#include <cstdint>

#include "backend/cpu/kquant_packed.h"

namespace pagellm::kquant_packed {

// Byte offsets inside one record (see kquant_packed.h).
inline constexpr int64_t kQ4_KSc = 2048, kQ4_KMn = 2176, kQ4_KD = 2304, kQ4_KDmin = 2336, kQ5_KQh = 2368;
inline constexpr int64_t kQ6_KQh = 2048, kQ6_KSc = 3072, kQ6_KD = 3328;
inline constexpr int64_t kQ5_0Qh = 256, kQ4_0D = 256, kQ5_0D = 320;  // also Q4_1's d, Q5_1's qh and d
inline constexpr int64_t kQ4_1M = 288, kQ5_1M = 352;
inline constexpr int64_t kIq4XsSc = 2048, kIq4XsD = 2176;
inline constexpr int64_t kQ4_ZParamZ = 32;  // z [16] after d [16] fp16 in a group's params

// IQ4_NL's table plus 128, as unsigned bytes for vpdpbusd.
alignas(16) inline constexpr uint8_t kIq4NlPlus128[16] = {1,   24,  45,  63,  79,  93,  106, 118,
                                                          129, 141, 153, 166, 181, 197, 217, 241};

// 32-value block records: whether the codes have a plane of 5th bits, whether the block is
// affine (an fp16 offset m per row), and the offsets of the fp16 d and m.
inline constexpr bool Block32HasFifthBit(DType dtype) { return dtype == DType::kQ5_0 || dtype == DType::kQ5_1; }
inline constexpr bool Block32IsAffine(DType dtype) { return dtype == DType::kQ4_1 || dtype == DType::kQ5_1; }
inline constexpr int64_t Block32D(DType dtype) { return Block32HasFifthBit(dtype) ? kQ5_0D : kQ4_0D; }
inline constexpr int64_t Block32M(DType dtype) { return dtype == DType::kQ5_1 ? kQ5_1M : kQ4_1M; }

struct PackedActs {
  const int8_t* q = nullptr;     // [num_rows, k]
  const float* d = nullptr;      // [num_rows, nsb]
  const int32_t* aux = nullptr;  // [num_rows, nsb, 16]: Q6_K -32 * bsum16; Q4_K / Q5_K the 4
                                 // pairs (bsum32 of sub 2p | bsum32 of sub 2p + 1 << 16);
                                 // IQ4_XS -128 * bsum32 of the 8 sub-blocks;
                                 // 32-value blocks: [num_rows, nsb] -128 * sum (q8_0 acts)
  int64_t num_rows = 0, k = 0, nsb = 0;
  // Where the strips' results go: column c of row m at y[m * ldy + c - col0] (ldy = w.n and
  // col0 = 0, or one part of a stacked weight: its n and first column).
  int64_t ldy = 0, col0 = 0;
};

// QuantizeRowQ8_K (backend/kquant_gemm.h) bit for bit, with AVX-512.
void QuantizeRowQ8_KAvx512(const float* x, int64_t k, int8_t* q, float* d, int32_t* bsum16);

// y[:, 16 * s_begin .. min(n, 16 * s_end)) for every activation row.
void StripsAvx512(const PackedActs& x, const KQuantPackedWeight& w, int64_t s_begin, int64_t s_end,
                  const float* bias, float* y);
void StripsAvx2(const PackedActs& x, const KQuantPackedWeight& w, int64_t s_begin, int64_t s_end,
                const float* bias, float* y);
// Strips [s_begin, s_end) of w with one byte per weight (Q6_K's top bits and Q5's 5th bits
// joined, IQ4 codes as table value + 128), [k / 4][16 rows][4] per strip (strip i at
// i * 16 * w.k): the B layout of tdpbsud and the operand of one vpdpbusd per 4 columns. In a
// buffer of the calling thread's, valid until its next call. AVX-512.
const uint8_t* UnpackStripsAvx512(const KQuantPackedWeight& w, int64_t s_begin, int64_t s_end);

// The same on AMX tiles (kquant_packed_amx.cc), bit for bit StripsAvx512; x.q padded with
// rows to a multiple of 16. model_tiles: on the software model of the tiles (amx_tiles.h),
// for machines without AMX (tests); otherwise needs CpuSupportsAmxInt8().
void StripsAmx(const PackedActs& x, const KQuantPackedWeight& w, int64_t s_begin, int64_t s_end, const float* bias,
               float* y, bool model_tiles);

}  // namespace pagellm::kquant_packed
