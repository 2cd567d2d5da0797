// The k-quant linear (weights kQ4_K / kQ5_K / kQ6_K as in a GGUF file, activations quantized
// per row to int8): its activation quantizer and its scalar oracle, shared by the
// reference backend and the CPU kernels' tests.
//
// Activations: per row and block of 256, llama.cpp's quantize_row_q8_K_ref: the value of
// largest magnitude (the first one) sets iscale = -127 / max, q = round_half_even(iscale * x)
// (at most 127), d = 1 / iscale (float), plus the int32 sums of each 16 q's.
// Products (exact int32 per super-block, fp32 across super-blocks, block order):
//   Q4_K, Q5_K (codes 0..15 / 0..31): isum = sum_j sc_j * dot_j, imin = sum_j m_j * (bsum_2j + bsum_2j+1) over the
//         8 sub-blocks of 32; acc = fma(isum, d_w * d_x, acc); acc = fma(-imin, dmin_w * d_x, acc)
//   Q6_K: isum = sum_j sc_j * (dot_j - 32 * bsum_j) over the 16 sub-blocks of 16 (codes 0..63);
//         acc = fma(isum, d_w * d_x, acc)
//   IQ4_XS: isum = sum_j (ls_j - 32) * dot_j over 8 sub-blocks of 32 of table values;
//         acc = fma(isum, d_w * d_x, acc)
// then y = acc + bias. Q4_0 / Q5_0 / IQ4_NL / Q4_Z (32-value blocks; Q4_Z's centred value is code - z) run as llama.cpp pairs them,
// with q8_0 activations (QuantizeRowQ8_0) and GemmQ8_0Reference's arithmetic: per block
// acc = fma(dot, d_w * d_x, acc) with dot the exact sum of centred values times q8_0 bytes.
// Q4_1 / Q5_1 (value d_w * code + m_w): dot of the uncentred codes as above, then the min term
// from the activations' block sum, as Q4_K's mins use the bsums: acc = fma(sum, m_w * d_x, acc)
// with sum the exact int32 sum of the block's 32 q8_0 bytes. (llama.cpp pairs them with q8_1
// activations, whose s field is fp16(d_x * sum); pagellm keeps the sum exact.)
// The packed CPU kernels (backend/cpu/kquant_packed.h) compute the
// same operations in the same order, so they match GemmKQuantReference bit for bit.
//
//   GemmKQuantReference(DType::kQ4_K, blocks, n, k, x, m, bias_or_null, y);
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace pagellm {

// x [k] -> q [k], d [k / 256], bsum16 [k / 16]. Precondition: k % 256 == 0.
void QuantizeRowQ8_K(const float* x, int64_t k, int8_t* q, float* d, int32_t* bsum16);

// y [m, n] = x [m, k] . W^T (+ bias [n]); w: n rows of blocks of `dtype` (IsPackedQuant).
void GemmKQuantReference(DType dtype, const void* w, int64_t n, int64_t k, const float* x, int64_t m,
                         const float* bias, float* y);

}  // namespace pagellm
