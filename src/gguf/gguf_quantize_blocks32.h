// Quantizers of the 32-value GGUF block types Q4_0, Q5_0, Q4_1 and Q5_1, producing the bytes of
// llama.cpp's reference quantizers (ggml-quants.c quantize_row_q4_0_ref / q5_0_ref / q4_1_ref /
// q5_1_ref), which llama-quantize runs for these types when it has no importance matrix.
//
//   std::vector<BlockQ4_0> blocks(n / 32);
//   QuantizeRowQ4_0(x, n, blocks.data());
//
// Q4_0 / Q5_0 are symmetric: the value of largest magnitude, max, maps to code 0
// (d = max / -8 or / -16), so d carries max's sign and the other end of the range is one code
// short. Q4_1 / Q5_1 are affine: d = (max - min) / 15 or / 31, m = min. Codes round half up from the float
// (not the fp16-rounded) d. Precondition for all: n % 32 == 0.
#pragma once

#include <cstdint>

#include "gguf/gguf_quants.h"
#include "tensor/kquant_blocks.h"

namespace pagellm {

void QuantizeRowQ4_0(const float* x, int64_t n, BlockQ4_0* out);
void QuantizeRowQ5_0(const float* x, int64_t n, BlockQ5_0* out);
void QuantizeRowQ4_1(const float* x, int64_t n, BlockQ4_1* out);
void QuantizeRowQ5_1(const float* x, int64_t n, BlockQ5_1* out);

}  // namespace pagellm
