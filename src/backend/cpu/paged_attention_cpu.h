// Paged attention kernels of the CPU backend (one per ISA), see Backend::PagedAttention.
//
// Work items are (slice of up to 32 query rows of one sequence, KV head) pairs: the query
// heads sharing a KV head (GQA) run together so each K/V row is read and widened once.
// They are spread over OpenMP threads with dynamic scheduling (sequences differ in
// length). When a batch has too few items to keep every thread busy (one or two long
// decodes), a decode row's context is cut into whole-block ranges whose partial softmax
// states are merged at the end (flash-decoding). Each row walks its context block by
// block: scores for a tile of tokens (vector dots reduced together), an online-softmax
// update in fp32, then acc += p * v with the accumulators in registers (prefill rows a
// few at a time against the same block, each with its causal end); the next
// (scattered) block is prefetched meanwhile. K/V are read in the cache dtype and widened
// on the fly. Requires head_dim % 16 == 0 (every Qwen model); callers fall back to the
// reference kernel otherwise.
//
//   PagedAttentionAvx512(q, cache.layer(l), batch, dims, out);  // out: [T, nh, hd]
#pragma once

#include "backend/backend.h"

namespace pagellm {

void PagedAttentionAvx2(const float* q, const KvLayerView& cache, const AttentionBatch& batch,
                        const AttentionDims& dims, float* out);
void PagedAttentionAvx512(const float* q, const KvLayerView& cache, const AttentionBatch& batch,
                          const AttentionDims& dims, float* out);

}  // namespace pagellm
