// Q4_K, Q5_K, Q6_K, IQ4_XS, Q4_0, Q5_0, Q4_1, Q5_1 and IQ4_NL weights rearranged losslessly once at load (CpuBackend::PrepareLinear) into
// 16-row strips, the layout of q8_0_packed.h carried over to 4- and 6-bit codes, so one
// VNNI kernel serves the decode GEMV and the prefill GEMM without a float copy.
//
// Per strip (16 weight rows; rows past N are padding with zero codes, scales and d) and
// super-block of 256 columns, one contiguous record; the records of 4 consecutive strips
// interleave, super-block by super-block (KQuantPackedWeight::record):
//   Q4_K, 2368 bytes (16 x 144 = 2304 in the file: 1.028x; the 6-bit scales/mins as bytes)
//     qs  [8 sub][4 g][16 rows][4 bytes]  byte i: low nibble = column 32 sub + 4g + i,
//                                          high nibble = column 32 sub + 16 + 4g + i
//     sc  [8 sub][16 rows]      u8 sub-block scales
//     mn  [4 pairs][16 rows][2] u8 sub-block mins (sub 2p, 2p + 1) for one vpdpwssd per pair
//     d, dmin [16] fp16
//   Q5_K, 2880 bytes (16 x 176 = 2816: 1.023x): Q4_K's record, then
//     qh  [8 sub][16 rows][4]   byte i: bit g = 5th bit of column 32 sub + 4g + i, bit 4 + g
//                               that of column 32 sub + 16 + 4g + i
//   Q6_K, 3392 bytes (16 x 210 = 3360: 1.0095x, padded to 64-byte records)
//     ql  [8 blk][4 g][16 rows][4]  low 4 bits, nibbles as Q4_K's qs (blk = 32 columns)
//     qh  [8 blk][2][16 rows][4]    top 2 bits: byte i of half h, bits 2g..2g+1 belong to
//                                   column 32 blk + 16 h + 4g + i
//     sc  [16 sub][16 rows]         int8 scales of the 16-column sub-blocks
//     d   [16] fp16
//   IQ4_XS, 2240 bytes (16 x 136 = 2176: 1.029x): qs as Q4_K's, sc [8 sub][16 rows] int8
//     ls - 32, d [16] fp16, padding to 64-byte records
//   Q4_0 / IQ4_NL, 288 bytes per strip and block of 32 columns (16 x 18: 1.0x), Q5_0 352
//   (16 x 22: 1.0x): qs [4 g][16 rows][4] as Q4_K's qs of one sub-block, Q5_0's 5th bits
//   [16 rows][4] as Q5_K's qh, d [16] fp16. Q4_1, 320 bytes (16 x 20: 1.0x): Q4_0's record,
//   then m [16] fp16; Q5_1, 384 (16 x 24: 1.0x): Q5_0's record, then m [16] fp16. Records
//   are 32-byte aligned (unaligned loads).
//   Q4_Z (AWQ / GPTQ / compressed-tensors int4), 256 bytes per strip and block of 32: qs as
//   Q4_0's; the (d, z) of a group live once per strip and group in group_params (48 bytes:
//   d [16] fp16, z [16] u8), the group being the longest run of blocks that every row's
//   (d, z) repeats over (the checkpoint's group size, found at Pack): for groups of 128,
//   268 bytes per 16 x 32 against the checkpoint's 266 (1.008x).
// A zmm load of 64 code bytes holds 4 columns (x 2 nibbles) of 16 rows, so each vpdpbusd
// (unsigned codes x a broadcast of 4 signed activation bytes) adds into one int32 lane per
// weight row, exactly as the Q8_0 kernel does; sub-block scales multiply the int32 dots,
// Q4_K mins and Q4_1 / Q5_1 offsets come from the activations' block sums and Q6_K's -32
// offset starts the dot at -32 * sum(x); Q4_Z's zero points start it at -z * sum(x) per row. Numerics: bit for bit GemmKQuantReference (backend/kquant_gemm.h).
//
//   auto packed = KQuantPackedWeight::Pack(DType::kQ4_K, blocks, n, k);   // load time
//   RunKQuantPacked(*packed, x, num_rows, bias, y, KQuantKernels::kAvx512);
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>

#include "backend/cpu/linear_output.h"
#include "tensor/dtype.h"

namespace pagellm {

inline constexpr int64_t kKQuantPackRows = 16;
inline constexpr int64_t kKQuantGroupStrips = 4;  // strips whose records interleave (record())
inline constexpr int64_t kQ4_KPackBytes = 2368;  // per strip and super-block
inline constexpr int64_t kQ5_KPackBytes = 2880;
inline constexpr int64_t kQ6_KPackBytes = 3392;
inline constexpr int64_t kIq4XsPackBytes = 2240;
inline constexpr int64_t kQ4_0PackBytes = 288;  // also IQ4_NL
inline constexpr int64_t kQ5_0PackBytes = 352;
inline constexpr int64_t kQ4_1PackBytes = 320;
inline constexpr int64_t kQ5_1PackBytes = 384;
inline constexpr int64_t kQ4_ZPackBytes = 256;
inline constexpr int64_t kQ4_ZGroupParamBytes = 48;  // d [16] fp16, z [16] u8

struct KQuantPackedWeight {
  struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
  };
  DType dtype = DType::kQ4_K;
  int64_t n = 0, k = 0, nsb = 0, num_strips = 0;  // nsb = k / block (256 or 32), num_strips = ceil(n / 16)
  int64_t record_bytes = 0;                       // k...PackBytes of the dtype
  std::unique_ptr<uint8_t, FreeDeleter> data;     // [num_strips][nsb][record_bytes], 64-byte aligned
  // kQ4_Z only: blocks per (d, z) group, and [num_strips][nsb / group_blocks][48] of group params.
  int64_t group_blocks = 0;
  std::unique_ptr<uint8_t, FreeDeleter> group_params;

  int64_t num_groups() const { return group_blocks > 0 ? nsb / group_blocks : 0; }
  int64_t owned_bytes() const {
    return num_strips * nsb * record_bytes + num_strips * num_groups() * kQ4_ZGroupParamBytes;
  }
  // Records are stored a group of kKQuantGroupStrips strips at a time, super-block after
  // super-block ([group][sb][strip of the group]; the last group may be narrower), so the
  // GEMV's 4-strip tile reads one contiguous stream instead of one per strip.
  int64_t record_offset(int64_t strip, int64_t sb) const {
    const int64_t first = strip / kKQuantGroupStrips * kKQuantGroupStrips;
    const int64_t width = std::min(kKQuantGroupStrips, num_strips - first);
    return (first * nsb + sb * width + (strip - first)) * record_bytes;
  }
  const uint8_t* record(int64_t strip, int64_t sb) const { return data.get() + record_offset(strip, sb); }
  // kQ4_Z: the params of the group holding block sb.
  const uint8_t* params(int64_t strip, int64_t sb) const {
    return group_params.get() + (strip * num_groups() + sb / group_blocks) * kQ4_ZGroupParamBytes;
  }

  // w: n rows of blocks of `dtype` (IsPackedQuant), k a multiple of its block size. Null when the
  // array cannot be allocated.
  static std::unique_ptr<KQuantPackedWeight> Pack(DType dtype, const void* w, int64_t n, int64_t k);
  // Pack of several weights' rows stacked: parts[i] holds part_rows[i] rows of `dtype` and k.
  // The same records as Pack of their concatenation (Q4_Z: the same group params, over the
  // longest run of blocks every part's (d, z) repeat over).
  static std::unique_ptr<KQuantPackedWeight> PackStacked(DType dtype, std::span<const void* const> parts,
                                                         std::span<const int64_t> part_rows, int64_t k);
};

// Which kernels run the products; every choice gives the same floats bit for bit.
enum class KQuantKernels {
  kAvx2,
  kAvx512,  // AVX-512 VNNI: needs CpuSupportsAvx512Vnni()
  // kAvx512 for up to kKQuantGemvRows activation rows, AMX-INT8 tiles above (batches,
  // prefill): needs CpuSupportsAmxInt8().
  kAmx,
  // kAmx with the tiles simulated in software (amx_tiles.h): slow; for tests of the AMX
  // kernels on machines without AMX. Needs CpuSupportsAvx512Vnni().
  kAmxModel,
};
inline constexpr int64_t kKQuantGemvRows = 4;  // the GEMV tiles' rows; more take the GEMM path

// y [M, N] = x [M, K] . W^T (+ bias [N], or null).
void RunKQuantPacked(const KQuantPackedWeight& w, const float* x, int64_t num_rows, const float* bias, float* y,
                     KQuantKernels kernels);

// The same product with the columns split over `outs` in order (the n sum to w.n; each but
// the last a multiple of 16, so no strip spans two): one call, one fork, for q|k|v or
// gate|up. Bit for bit the columns RunKQuantPacked gives. bias [w.n] or null.
void RunKQuantPackedParts(const KQuantPackedWeight& w, const float* x, int64_t num_rows, const float* bias,
                          std::span<const LinearOutput> outs, KQuantKernels kernels);

// One packed weight of RunKQuantPackedSections, its columns split over `outs` as in
// RunKQuantPackedParts. bias [w->n] or null.
struct KQuantSection {
  const KQuantPackedWeight* w = nullptr;
  std::span<const LinearOutput> outs;
  const float* bias = nullptr;
};
inline constexpr int64_t kMaxKQuantSections = 8;

// The products of one x with several packed weights in one call and one fork: a stacked
// linear whose parts differ in type, as q|k in Q4_K and v in Q6_K in half the layers of a
// Q4_K_M file. All of one k; more than one section only of the 256-column types (Q4_K, Q5_K,
// Q6_K, IQ4_XS), whose activations quantize alike. Bit for bit each section's RunKQuantPackedParts.
void RunKQuantPackedSections(std::span<const KQuantSection> sections, const float* x, int64_t num_rows,
                             KQuantKernels kernels);

}  // namespace pagellm
