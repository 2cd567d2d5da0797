// Quantizers of llama.cpp's k-quants Q4_K, Q5_K and Q6_K without an importance matrix,
// producing the bytes of ggml-quants.c's quantize_row_{q4,q5,q6}_K_ref (what llama-quantize's
// ggml_quantize_chunk runs when it has no imatrix).
//
//   std::vector<BlockQ4_K> blocks(n / 256);
//   QuantizeRowQ4_K(x, n, blocks.data());
//
// Q4_K / Q5_K: each sub-block of 32 gets a weighted least-squares affine fit
// x ~ scale * q - min (weights |x| + rms of the sub-block, 21 / 16 trial grids, llama.cpp's
// make_qkx2_quants); the 8 scales and mins are then coded in 6 bits against the block's
// largest ones (d, dmin in fp16) and the codes re-derived from the coded scales.
// Q6_K: each sub-block of 16 gets a symmetric fit weighted by x^2 over 19 trial scales around
// 32 / max (make_qx_quants); the 16 scales are coded as int8 against the largest and the codes
// re-derived. Precondition for all: n % 256 == 0.
#pragma once

#include <cstdint>

#include "tensor/kquant_blocks.h"

namespace pagellm {

void QuantizeRowQ4_K(const float* x, int64_t n, BlockQ4_K* out);
void QuantizeRowQ5_K(const float* x, int64_t n, BlockQ5_K* out);
void QuantizeRowQ6_K(const float* x, int64_t n, BlockQ6_K* out);

}  // namespace pagellm
