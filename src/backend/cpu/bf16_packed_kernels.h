// Internals of RunBf16Packed (bf16_packed.h): the prepared activations and the per-ISA
// kernels that bf16_packed.cc drives over OpenMP work items. Not for use elsewhere.
//
//   Acts acts{...};   // AVX-512: bf16 pairs of x; AVX2: fp32 x, k padded to even
//   bf16_packed::RowsAvx512(acts, w, 0, num_rows, s_begin, s_end, bias, y);
#pragma once

#include <cstdint>

#include "backend/cpu/bf16_packed.h"

namespace pagellm::bf16_packed {

struct Acts {
  const uint32_t* pairs = nullptr;  // AVX-512: [num_rows][stride] bf16 pairs of x (RNE)
  const float* values = nullptr;    // AVX2: [num_rows][2 * stride] fp32 x (a zero after k when odd)
  int64_t stride = 0;               // pairs per row
};

// y[m_begin .. m_end)[16 * s_begin .. min(n, 16 * s_end)) (y has w.n columns).
void RowsAvx512(const Acts& x, const Bf16PackedWeight& w, int64_t m_begin, int64_t m_end, int64_t s_begin,
                int64_t s_end, const float* bias, float* y);
void RowsAvx2(const Acts& x, const Bf16PackedWeight& w, int64_t m_begin, int64_t m_end, int64_t s_begin,
              int64_t s_end, const float* bias, float* y);

// fp32 x [rows, k] -> bf16 pairs, zero padded to `stride` pairs (RNE, as vcvtneps2bf16).
void ConvertActsAvx512(const float* x, int64_t rows, int64_t k, int64_t stride, uint16_t* out);

}  // namespace pagellm::bf16_packed
