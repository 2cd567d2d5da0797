// Internals of RunQ8_0Packed (q8_0_packed.h): the quantized activations and the per-ISA
// kernel that q8_0_packed.cc drives over OpenMP work items. Not for use elsewhere.
//
//   PackedActs acts{...};   // q8_0 activations, block scales, -128 * block sums
//   Q8_0PackedStripsAvx512(acts, w, s_begin, s_end, bias, y);   // all M rows, strips [s_begin, s_end)
#pragma once

#include <cstdint>

#include "backend/cpu/q8_0_packed.h"

namespace pagellm::q8_0_packed {

struct PackedActs {
  const int8_t* q = nullptr;       // [num_rows, k] q8_0 values
  const float* d = nullptr;        // [num_rows, nb] fp16 block scales, widened
  const int32_t* corr = nullptr;   // [num_rows, nb] -128 * sum of the block's 32 values
  int64_t num_rows = 0, k = 0, nb = 0;
  int64_t ldy = 0;   // y's row stride: the n of the output the strips write
  int64_t col0 = 0;  // w's column that is y's column 0 (a stacked weight's part)
};

// y[:, 16 * s_begin - col0 .. min(n, 16 * s_end) - col0) for every activation row.
void StripsAvx512(const PackedActs& x, const Q8_0PackedWeight& w, int64_t s_begin, int64_t s_end,
                  const float* bias, float* y);
// Rows [m_begin, m_end) of x [M, K] -> q8_0 values, widened scales and -128 * block sums,
// bit for bit QuantizeRowQ8_0 (needs AVX-512).
void QuantizeActsAvx512(const float* x, int64_t k, int64_t m_begin, int64_t m_end, int8_t* q, float* d,
                        int32_t* corr);
void StripsAvx2(const PackedActs& x, const Q8_0PackedWeight& w, int64_t s_begin, int64_t s_end,
                const float* bias, float* y);

}  // namespace pagellm::q8_0_packed
