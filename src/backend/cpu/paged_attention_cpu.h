// Paged attention kernels of the CPU backend (one per ISA), see Backend::PagedAttention.
//
// Work items are (sequence, query head) pairs, spread over OpenMP threads with dynamic
// scheduling (sequences differ in length). Each query row walks its context block by
// block: scores for one block (vector dot over head_dim), an online-softmax update in
// fp32, then acc += p * v (vector axpy). K/V are read in the cache dtype and widened
// on the fly. Requires head_dim % 16 == 0 (every Qwen model); callers fall back to the
// reference kernel otherwise.
#pragma once

#include "backend/backend.h"

namespace pagellm {

void PagedAttentionAvx2(const float* q, const KvLayerView& cache, const AttentionBatch& batch,
                        const AttentionDims& dims, float* out);
void PagedAttentionAvx512(const float* q, const KvLayerView& cache, const AttentionBatch& batch,
                          const AttentionDims& dims, float* out);

}  // namespace pagellm
