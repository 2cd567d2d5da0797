// Int8 GEMV/GEMM kernels for Q8_0 (GGUF) and W8A8 linear layers (see backend.h).
//
// Q8_0: y [M, N] = x [M, K] · W^T where W is llama.cpp block_q8_0 [N, K/32] read in
// place, and x was quantized to q8_0 blocks (QuantizeRowQ8_0). Per block the int8 dot is
// exact (AVX2: vpmaddubsw on |x| and sign(w, x) as in llama.cpp; AVX-512: the same sign
// trick into vpdpbusd), then scaled by d_w * d_x and accumulated in fp32. Work is split
// over N in chunks of rows (dynamic OpenMP schedule); each chunk then loops over all M (4
// rows at a time). Meant for M <= 4 (decode): larger Q8_0 batches go to the GEMM
// (int8_gemm.h), which reuses each loaded weight vector across 6 activation rows.
//
// W8A8: W int8 [N, k_padded] (per-channel scale s_w, row sums w_sum), x int8
// [M, k_padded] (per-row scale s_x), both zero-padded. AVX-512 VNNI offsets x by +128
// (u8 operand of vpdpbusd) and subtracts 128 * w_sum[n]; AVX2 uses the sign trick.
// Integer dot products are exact; y = float(dot) * s_x[m] * s_w[n] + bias[n].
//
//   Q8_0GemvArgs a{.x = xq, .x_d = xd, .num_rows = 1, .k = 1024, .w = w, .n = 3072, .y = y};
//   CpuSupportsAvx512Vnni() ? GemvQ8_0Avx512(a) : GemvQ8_0Avx2(a);
#pragma once

#include <cstdint>

#include "backend/int8_quant.h"

namespace pagellm {

struct Q8_0GemvArgs {
  const BlockQ8_0* x = nullptr;  // [num_rows, k / 32] quantized activations
  const float* x_d = nullptr;    // [num_rows, k / 32] float(x[.].d)
  int64_t num_rows = 0;          // M (any)
  int64_t k = 0;                 // K, multiple of 32
  const BlockQ8_0* w = nullptr;  // [n, k / 32]
  int64_t n = 0;                 // N
  const float* bias = nullptr;   // [n] or null
  float* y = nullptr;            // [num_rows, n]
};

struct W8A8GemvArgs {
  const int8_t* x = nullptr;        // [num_rows, k_padded], zero padded
  const float* x_scale = nullptr;   // [num_rows]
  int64_t num_rows = 0;             // M (any; meant for M <= 4)
  int64_t k_padded = 0;             // multiple of 64
  const int8_t* w = nullptr;        // [n, k_padded], zero padded
  const int32_t* w_sum = nullptr;   // [n] sum_k w[n, k]
  const float* w_scale = nullptr;   // [n]
  int64_t n = 0;
  const float* bias = nullptr;      // [n] or null
  float* y = nullptr;               // [num_rows, n]
};

// True when the CPU has AVX-512 VNNI (+VL/BW), needed by the *Avx512 int8 kernels.
bool CpuSupportsAvx512Vnni();

void GemvQ8_0Avx2(const Q8_0GemvArgs& args);
void GemvQ8_0Avx512(const Q8_0GemvArgs& args);
void GemvW8A8Avx2(const W8A8GemvArgs& args);
void GemvW8A8Avx512(const W8A8GemvArgs& args);

}  // namespace pagellm
