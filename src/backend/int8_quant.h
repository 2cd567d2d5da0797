// Int8 quantizers shared by the reference and CPU backends (scalar, bit-exact oracles).
//
// Two schemes:
//  * Q8_0 (llama.cpp block_q8_0): 32 values per block, fp16 scale d = amax / 127,
//    q = round_half_even(x * (127 / amax)). This is llama.cpp's x86 quantize_row_q8_0
//    (ggml-cpu/arch/x86/quants.c, AVX2 branch: id = 127/amax, _mm256_round_ps nearest),
//    the function that quantizes activations before ggml_vec_dot_q8_0_q8_0 on this
//    class of machine. Weights in GGUF files come already quantized.
//  * Per-row symmetric int8 (W8A8): one fp32 scale per row (output channel of a weight,
//    or token of an activation), same rounding: s = amax / 127, q = rne(x * (127/amax)).
//
//   std::vector<BlockQ8_0> xq(k / 32);
//   QuantizeRowQ8_0(x, k, xq.data());                 // activation row -> q8_0
//   float s = QuantizeRowInt8(w_row, k, q_row);       // weight row -> int8 + scale
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace pagellm {

// llama.cpp's block_q8_0, byte for byte (34 bytes, 2-byte aligned).
struct BlockQ8_0 {
  uint16_t d;           // fp16 scale
  int8_t qs[kQ8_0BlockElements];
};
static_assert(sizeof(BlockQ8_0) == kQ8_0BlockBytes, "block_q8_0 must be 34 bytes");

// x [k] -> out [k / 32] blocks. Precondition: k % 32 == 0.
void QuantizeRowQ8_0(const float* x, int64_t k, BlockQ8_0* out);

// in [k / 32] blocks -> out [k] = fp16(d) * qs. Precondition: k % 32 == 0.
void DequantizeRowQ8_0(const BlockQ8_0* in, int64_t k, float* out);

// x [k] -> q [k] in [-127, 127]; returns the scale amax / 127 (0 for an all-zero row,
// with q all zero). x ~= scale * q.
float QuantizeRowInt8(const float* x, int64_t k, int8_t* q);

}  // namespace pagellm
