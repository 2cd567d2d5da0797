// Internal: per-ISA single-head kernels behind gdn_delta_rule.h. Not for other callers.
//
// One call processes one value head of one sequence: the state tile [dk, dv] and the
// head's rows of q/k/v/beta/g/out, all addressed through strides so the caller can point
// straight into the [T, heads, dim] activations.
#pragma once

#include <cstdint>

#include "model/hybrid/gdn_dims.h"
#include "model/hybrid/gdn_prepare.h"

namespace pagellm::gdn_internal {

inline constexpr int64_t kChunk = 64;  // max chunk size C (= kGdnChunkSize); scratch is sized for it

struct HeadArgs {
  int64_t num_tokens = 0;
  int64_t dk = 0, dv = 0;           // multiples of 16, <= 256
  const float* q = nullptr;         // row t at q + t * q_stride, [dk]
  const float* k = nullptr;         // row t at k + t * k_stride, [dk]
  const float* v = nullptr;         // row t at v + t * v_stride, [dv]
  int64_t q_stride = 0, k_stride = 0, v_stride = 0;
  const float* beta = nullptr;      // token t at beta[t * gate_stride]
  const float* g = nullptr;         // token t at g[t * gate_stride]
  int64_t gate_stride = 0;
  float* out = nullptr;             // row t at out + t * out_stride, [dv]
  int64_t out_stride = 0;
  float* state = nullptr;           // [dk, dv], in/out
  int64_t chunk_size = kChunk;      // chunked form only: C, a multiple of 16 <= kChunk
};

// Floats of scratch one ChunkedHead call needs: gamma and decay factors [2, C],
// K^T [dk, C], K K^T and Q K^T [2, C, C], U [C, dv], W [C, dk].
inline int64_t ChunkedHeadScratchFloats(int64_t dk, int64_t dv) {
  return 2 * kChunk + dk * kChunk + 2 * kChunk * kChunk + kChunk * dv + kChunk * dk;
}

// Args for value head `head` of the sequence whose token rows start at `row0` of `in`;
// state [nv, dk, dv] and out [rows, nv, dv] are the sequence's full arrays.
HeadArgs MakeHeadArgs(const GdnDims& dims, const GdnInputs& in, int64_t row0, int64_t num_tokens, int64_t head,
                      float* state, float* out);

void RecurrentHeadAvx2(const HeadArgs& a);
void RecurrentHeadAvx512(const HeadArgs& a);
void ChunkedHeadAvx2(const HeadArgs& a, float* scratch);
void ChunkedHeadAvx512(const HeadArgs& a, float* scratch);

}  // namespace pagellm::gdn_internal
