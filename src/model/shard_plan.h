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
//   MoE: every expert (and the shared expert) split like the MLP, within the expert;
//     router and shared-expert gate replicated, so every rank routes alike.
//   Gated DeltaNet (Qwen3-Next / 3.5): key heads [r*nk/N, (r+1)*nk/N) and the value
//     heads reading them, with their conv channels, a/b/z rows, A_log, dt_bias and so
//     their recurrent state; out_proj the matching columns. Gated attention's q_proj
//     rows go by head ([q | gate], 2*hd rows each).
// So each layer ends its attention and its MLP with a partial sum (two all-reduces per
// layer), and a rank's KV cache holds only its own KV heads.
// Row slices are views (no copy); column slices (o_proj, down_proj, out_proj) and
// Qwen3.5's gathered q/k/v rows are copies, after which the source's file pages are
// dropped. The result keeps the source's storage alive.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "model/config.h"
#include "model/weights.h"

namespace pagellm {

// A rank's place in a tensor x pipeline parallel layout: tensor-parallel rank `rank` of
// `size` inside pipeline stage `stage` of `num_stages` (world rank stage * size + rank,
// vLLM's order).
struct ShardSpec {
  int rank = 0;
  int size = 1;
  int stage = 0;
  int num_stages = 1;
};

// The decoder layers [first, end) one pipeline stage runs: an even split, the later
// stages taking the remainder (stage 0 also embeds and, on rank 0, schedules and samples).
struct LayerRange {
  int64_t first = 0, end = 0;
  int64_t size() const { return end - first; }
};
LayerRange StageLayers(int64_t num_layers, int stage, int num_stages);

// What a stage's layers keep per token: KV-cache layers (every layer of a dense model,
// the full-attention ones of a hybrid) and GDN-state layers.
struct StageLoad {
  int64_t attention_layers = 0, gdn_layers = 0;
};
StageLoad StageLoadOf(const ModelConfig& config, LayerRange layers);
// The most of each over the stages (every stage holds the same number of KV blocks and
// state slots, so the largest one decides the memory plan).
StageLoad LargestStage(const ModelConfig& config, int num_stages);

struct ShardedModel {
  ModelConfig config;   // num_attention_heads, num_key_value_heads, intermediate_size per rank
  ModelWeights weights;  // lm_head: [lm_head_rows, H]; layers outside `layers` are empty
  LayerRange layers;           // this rank's pipeline stage
  int64_t lm_head_rows = 0;    // V / N
  int64_t vocab_begin = 0;     // first vocabulary row of this rank's lm_head
  int64_t weight_bytes = 0;    // bytes this rank's tensors occupy (embedding included once)
};

// Fails with InvalidArgument naming the size that does not divide (heads, KV heads,
// intermediate sizes, GDN heads, vocabulary) or a pipeline with more stages than layers.
StatusOr<ShardedModel> ShardModel(const ModelConfig& config, const ModelWeights& weights, ShardSpec spec);

// Checks only (no weights): the error ShardModel would give for this config, or OK.
Status CheckShardable(const ModelConfig& config, int size, int num_stages = 1);

}  // namespace pagellm

namespace pagellm {
namespace dist {
class Communicator;
}

// Where a rank's pipeline stage sits: which layers it runs and whom it exchanges
// activations with. One transfer per stage boundary: the hidden states [T, H] go from a
// stage's rank to the same tensor-parallel rank of the next stage; the last stage's
// tensor-parallel rank 0 sends the gathered logits to world rank 0. Default: one stage.
struct PipelineStage {
  dist::Communicator* world = nullptr;  // borrowed; carries the transfers (null: one stage)
  int64_t first_layer = 0, end_layer = -1;  // layers run here; end -1: through the last
  int prev_rank = -1;     // world rank whose output is this stage's input; -1: embeds the tokens
  int next_rank = -1;     // world rank this stage's output goes to; -1: last stage (norm, lm_head)
  int logits_peer = -1;   // world rank 0: the last stage's sender; that sender: 0; else -1
  bool first() const { return prev_rank < 0; }
  bool last() const { return next_rank < 0; }
};

// What a sharded forward pass needs at run time: the group to all-reduce over, the
// size of this rank's vocabulary slice and its pipeline stage. Default: one rank,
// nothing sharded.
struct TensorParallelism {
  dist::Communicator* comm = nullptr;  // borrowed; outlives the model (null: no tensor parallelism)
  int64_t lm_head_rows = 0;            // rows of this rank's lm_head; 0: the whole vocabulary
  PipelineStage pipeline;
};

}  // namespace pagellm
