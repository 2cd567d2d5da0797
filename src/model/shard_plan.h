// Shard plan: which slice of every weight a tensor-parallel rank holds, and the model
// config that rank's forward pass sees (Megatron / vLLM layout).
//
//   PAGELLM_ASSIGN_OR_RETURN(ShardedModel shard, ShardModel(config, weights, {.rank = 1, .size = 2}));
//   // shard.config: per-rank head counts and MLP width; shard.weights: views/copies of its slices
//
// Per rank r of N:
//   q_proj, k_proj, v_proj (+ biases): rows of its query heads [r*nh/N, (r+1)*nh/N) and
//     its KV heads; when N > nkv, each KV head is replicated on N/nkv ranks (rank r holds
//     head r*nkv/N), as vLLM does. o_proj: the matching columns; its bias only on rank 0.
//   gate_proj, up_proj: rows [r*I/N, (r+1)*I/N); down_proj: those columns.
//   lm_head: vocabulary rows [r*V/N, (r+1)*V/N) (vocab-parallel; logits are gathered).
//   embedding, norms, q/k norms: replicated.
// So each layer ends its attention and its MLP with a partial sum (two all-reduces per
// layer), and a rank's KV cache holds only its own KV heads.
// Row slices are views (no copy); column slices (o_proj, down_proj) are copies, after
// which the source's file pages are dropped. The result keeps the source's storage alive.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "model/config.h"
#include "model/weights.h"

namespace pagellm {

struct ShardSpec {
  int rank = 0;
  int size = 1;
};

struct ShardedModel {
  ModelConfig config;   // num_attention_heads, num_key_value_heads, intermediate_size per rank
  ModelWeights weights;  // lm_head: [lm_head_rows, H]
  int64_t lm_head_rows = 0;    // V / N
  int64_t vocab_begin = 0;     // first vocabulary row of this rank's lm_head
  int64_t weight_bytes = 0;    // bytes this rank's tensors occupy (embedding included once)
};

// Fails with InvalidArgument naming the size that does not divide (heads, KV heads,
// intermediate size, vocabulary), and Unimplemented for model kinds not sharded yet.
StatusOr<ShardedModel> ShardModel(const ModelConfig& config, const ModelWeights& weights, ShardSpec spec);

// Checks only (no weights): the error ShardModel would give for this config, or OK.
Status CheckShardable(const ModelConfig& config, int size);

}  // namespace pagellm

namespace pagellm {
namespace dist {
class Communicator;
}

// What a sharded forward pass needs at run time: the group to all-reduce over and the
// size of this rank's vocabulary slice. Default: one rank, nothing sharded.
struct TensorParallelism {
  dist::Communicator* comm = nullptr;  // borrowed; outlives the model
  int64_t lm_head_rows = 0;            // rows of this rank's lm_head; 0: the whole vocabulary
};

}  // namespace pagellm
