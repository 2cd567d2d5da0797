// Q8_0 x Q8_0 GEMM for prefill-sized batches (M > gemv_max_rows) of GGUF Q8_0 weights.
//
// y [M, N] = x [M, K] · W^T (+ bias), W llama.cpp block_q8_0 [N, K/32] read in place.
// The activations are quantized once per call (QuantizeRowQ8_0, as the GEMV and the
// reference do). Work is split into panels of 64 weight rows (OpenMP, dynamic); each
// thread repacks its panel into an L2-resident layout (int8_gemm_kernels.h) that puts 16
// weight rows side by side per 4-byte group, so one broadcast of 4 activation bytes feeds
// a vpdpbusd over 16 rows, and each weight vector loaded feeds several activation rows
// (register tiles of 6 rows x 32 weight rows on AVX-512, 2 x 16 on AVX2).
//
// Numerics (equal bit for bit across the AVX-512, AVX2 and scalar paths): per block b the
// int32 dot is exact, then acc = fma(float(dot), d_w * d_x, acc) in fp32 over b in order,
// then y = acc + bias. The reference backend (double sums) differs only by fp32 rounding.
//
//   GemmQ8_0({.x = x, .num_rows = 512, .k = 1024, .w = w, .n = 3072, .y = y}, /*avx512=*/true);
//   GemmQ8_0Reference(args);   // the scalar oracle of the same math
#pragma once

#include <cstdint>

#include "backend/int8_quant.h"

namespace pagellm {

struct Q8_0GemmArgs {
  const float* x = nullptr;      // [num_rows, k] float activations
  int64_t num_rows = 0;          // M (any; meant for M > 4)
  int64_t k = 0;                 // K, multiple of 32
  const BlockQ8_0* w = nullptr;  // [n, k / 32]
  int64_t n = 0;                 // N
  const float* bias = nullptr;   // [n] or null
  float* y = nullptr;            // [num_rows, n]
};

// avx512 = true needs CpuSupportsAvx512Vnni() (int8_gemv.h); false runs the AVX2 kernel.
void GemmQ8_0(const Q8_0GemmArgs& args, bool avx512);

// Plain scalar implementation of the same math (the test oracle).
void GemmQ8_0Reference(const Q8_0GemmArgs& args);

}  // namespace pagellm
