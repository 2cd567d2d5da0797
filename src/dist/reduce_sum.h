// The element-wise sums of an all-reduce: out[i] = ((src[0][i] + src[1][i]) + src[2][i]) + ...
// in fp32, always in rank order, so every rank computes identical bits.
//
//   const float* parts[2] = {rank0_chunk, rank1_chunk};
//   SumF32(parts, 2, n, out);   // out may alias any part
#pragma once

#include <cstdint>

namespace pagellm::dist {

// srcs: [num_srcs] pointers to [n] values; out: [n].
void SumF32(const float* const* srcs, int num_srcs, int64_t n, float* out);
// bf16 in and out, accumulated in fp32 and rounded once (round to nearest even).
void SumBf16(const uint16_t* const* srcs, int num_srcs, int64_t n, uint16_t* out);

}  // namespace pagellm::dist
