// Internals of the Q8_0 GEMM (int8_gemm.h): the packed weight layout and the per-ISA
// pack and panel kernels that int8_gemm.cc drives. Not for use outside the GEMM.
//
// Packed layout. A strip is 16 consecutive weight rows (rows past N are zero). For each
// block b (32 columns) a strip stores kStripBlockBytes bytes:
//   qs   [8 groups][16 rows][4 bytes]  int8 weights, group g = columns 4g .. 4g+3 of b
//   d    [16] float                    fp16 scale of each row's block, widened
//   corr [16] int32                    -128 * sum of the row's 32 weights (AVX-512 only:
//                                      its activations are stored as x + 128, unsigned)
// A panel is up to kPanelStrips strips, strip after strip ([strip][block][640 bytes]).
//
//   Q8_0GemmKernels k = avx512 ? Q8_0GemmKernelsAvx512() : Q8_0GemmKernelsAvx2();
//   k.pack(w, n, nb, n0, num_strips, panel);
//   k.panel(acts, panel, num_strips, n0, n, bias, y);
#pragma once

#include <cstdint>

#include "backend/int8_quant.h"

namespace pagellm::int8_gemm {

inline constexpr int64_t kStripRows = 16;
inline constexpr int64_t kGroups = 8;                         // 4-byte groups per block
inline constexpr int64_t kQsBytes = kGroups * kStripRows * 4;  // 512
inline constexpr int64_t kDOffset = kQsBytes;                  // 16 floats
inline constexpr int64_t kCorrOffset = kQsBytes + 64;          // 16 int32
inline constexpr int64_t kStripBlockBytes = kQsBytes + 128;    // 640
inline constexpr int64_t kPanelStrips = 4;                     // 64 weight rows per work item

// Activations quantized once per call.
struct Acts {
  const uint8_t* q = nullptr;  // [num_rows, k]: q8_0 values (AVX2), or values + 128 (AVX-512)
  const float* d = nullptr;    // [num_rows, nb] fp16 block scales, widened
  int64_t num_rows = 0, k = 0, nb = 0;
};

struct Q8_0GemmKernels {
  bool offset_acts;  // store activation values as q + 128 (q ^ 0x80)
  // Packs weight rows [n0, n0 + 16 * num_strips) of w [n, nb blocks] into `panel`.
  void (*pack)(const BlockQ8_0* w, int64_t n, int64_t nb, int64_t n0, int64_t num_strips, uint8_t* panel);
  // y[:, n0 .. min(n_end, n0 + 16 * num_strips)) = acts · panel^T (+ bias); y has n_end columns.
  void (*panel)(const Acts& x, const uint8_t* panel, int64_t num_strips, int64_t n0, int64_t n_end,
                const float* bias, float* y);
};

// 32 activations -> 32 int8 (xor 0x80 when `offset`), returning the widened fp16 scale:
// the same bytes as QuantizeRowQ8_0 (AVX2; also used by the packed Q8_0 path).
float QuantizeBlock(const float* x, bool offset, uint8_t* q);

Q8_0GemmKernels Q8_0GemmKernelsAvx512();
Q8_0GemmKernels Q8_0GemmKernelsAvx2();

}  // namespace pagellm::int8_gemm
