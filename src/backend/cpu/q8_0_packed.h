// Q8_0 weights repacked once at load (CpuBackend::PrepareLinear) into a layout that both
// the decode GEMV (M <= 4) and the prefill GEMM (M > 4) stream at memory bandwidth.
//
// Layout. A strip is 16 consecutive weight rows (rows past N are padding: weight 0,
// scale 0). For strip s and 32-column block b:
//   qs [s][b][8 groups][16 rows][4 bytes]  u8 = w + 128, group g = columns 4g .. 4g+3
//   d  [s][b][16 rows]                      the rows' fp16 block scales, as in the file
// 544 bytes per 16 x 32 weights: the same 34/32 bytes per weight as block_q8_0, but one
// zmm load holds 4 columns of 16 rows, so one vpdpbusd (u8 weights x a broadcast of 4
// signed activation bytes) does 64 multiply-adds and needs no vpsignb (absent on zmm).
// Since the weights carry +128, each block dot comes out as sum(w*x) + 128*sum(x); the
// activation block sums are computed once per call and the accumulator starts at
// -128*sum(x), so the int32 block dot is exact. AVX2 turns the bytes back to s8 (xor)
// and uses llama.cpp's sign trick in vpmaddubsw instead.
//
// Numerics: bit for bit GemmQ8_0Reference (int8_gemm.h): activations quantized as
// QuantizeRowQ8_0, per block acc = fma(float(dot), d_w * d_x, acc) in fp32 in block
// order, then y = acc + bias. (The in-place GEMV of int8_gemv.h sums in 8 lanes instead.)
//
//   auto packed = Q8_0PackedWeight::Pack(blocks, n, k);      // load time
//   RunQ8_0Packed(*packed, x, num_rows, bias, y, /*avx512=*/true);
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>

#include "backend/cpu/linear_output.h"
#include "backend/int8_quant.h"

namespace pagellm {

inline constexpr int64_t kQ8_0PackRows = 16;     // weight rows per strip
inline constexpr int64_t kQ8_0PackQsBytes = 512;  // qs bytes per strip and block

struct Q8_0PackedWeight {
  struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
  };
  int64_t n = 0, k = 0, nb = 0, num_strips = 0;  // nb = k / 32, num_strips = ceil(n / 16)
  std::unique_ptr<uint8_t, FreeDeleter> qs;      // [num_strips][nb][512], 64-byte aligned
  std::unique_ptr<uint16_t, FreeDeleter> d;      // [num_strips][nb][16] fp16

  // Bytes of the two arrays (the memory plan counts them).
  int64_t owned_bytes() const { return num_strips * nb * (kQ8_0PackQsBytes + 2 * kQ8_0PackRows); }

  // w: block_q8_0 [n, k / 32]; k % 32 == 0. Strips are packed in parallel (OpenMP).
  // Null when the arrays cannot be allocated.
  static std::unique_ptr<Q8_0PackedWeight> Pack(const BlockQ8_0* w, int64_t n, int64_t k);
  // Pack of several weights' rows stacked (q|k|v, gate|up): parts[i] holds part_rows[i]
  // rows of k / 32 block_q8_0. The same strips as Pack of their concatenation.
  static std::unique_ptr<Q8_0PackedWeight> PackStacked(std::span<const void* const> parts,
                                                       std::span<const int64_t> part_rows, int64_t k);
};

// y [M, N] = x [M, K] · W^T (+ bias [N], or null). avx512 needs CpuSupportsAvx512Vnni().
void RunQ8_0Packed(const Q8_0PackedWeight& w, const float* x, int64_t num_rows, const float* bias, float* y,
                   bool avx512);
// The same product with the columns split over `outs` in order (the n sum to w.n; each but
// the last a multiple of 16, so no strip spans two): one call, one fork, for q|k|v or
// gate|up. Bit for bit the columns RunQ8_0Packed gives. bias [w.n] or null.
void RunQ8_0PackedParts(const Q8_0PackedWeight& w, const float* x, int64_t num_rows, const float* bias,
                        std::span<const LinearOutput> outs, bool avx512);

}  // namespace pagellm
