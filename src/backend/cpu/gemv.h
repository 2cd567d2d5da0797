// Hand-written GEMV kernels for the small-M (decode) linear layers.
//
// y [M, N] = x [M, K] · W [N, K]^T (+ bias [N]), weights bf16/f16/f32, fp32 accumulate.
// Rows of W are split across OpenMP threads; each thread walks a few rows of W at once
// against all (up to 4) rows of x so every weight byte is loaded once per 4 rows of x.
// Decode is bound by DRAM bandwidth, so that is what these kernels optimise for; any
// M works (x is processed 4 rows at a time), but oneDNN wins beyond a few rows.
//
//   GemvArgs a{.x = x, .num_rows = 1, .k = 1024, .w = w, .w_dtype = DType::kBF16,
//              .n = 3072, .bias = nullptr, .y = y};
//   GemvAvx512(a);   // only when CpuSupportsAvx512Bf16()
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace pagellm {

struct GemvArgs {
  const float* x = nullptr;  // [num_rows, k]
  int64_t num_rows = 0;      // M
  int64_t k = 0;             // K
  const void* w = nullptr;   // [n, k] of w_dtype
  DType w_dtype = DType::kBF16;
  int64_t n = 0;               // N
  const float* bias = nullptr;  // [n] or null
  float* y = nullptr;           // [num_rows, n]
};

// Baseline: fp32 activations; bf16 widened by shift, f16 by F16C, FMA accumulate.
void GemvAvx2(const GemvArgs& args);

// AVX-512: bf16 weights use vdpbf16ps with activations rounded to bf16 (RNE), so the
// result differs from fp32 math by ~bf16 rounding of x; f16/f32 weights keep fp32 x.
void GemvAvx512(const GemvArgs& args);

// x [rows, k] fp32 -> out [rows, k_padded] bf16 (RNE), zero padded; k_padded is a
// multiple of 32 and >= k. Needs CpuSupportsAvx512Bf16().
void ConvertRowsToBf16Avx512(const float* x, int rows, int64_t k, int64_t k_padded, uint16_t* out);

}  // namespace pagellm
