// CreateCausalLm: the model behind the engine, picked from the config: QwenModel for
// dense and MoE Qwen2/Qwen3 checkpoints, HybridModel (with its own HybridStateCache of
// per-sequence GDN state slots) for Qwen3.5 / Qwen3-Next.
//
//   PAGELLM_ASSIGN_OR_RETURN(std::unique_ptr<CausalLm> model,
//                            CreateCausalLm(config, weights, *backend, /*max_num_tokens=*/2048, {}));
//   PAGELLM_RETURN_IF_ERROR(model->AllocateStateSlots(/*num_slots=*/max_num_seqs));
//
// Adapters rather than a base class inside model/: the model classes stay free of
// engine concerns, and the runner sees one interface (runner/model_runner.h).
#pragma once

#include <cstdint>
#include <memory>

#include "backend/backend.h"
#include "common/status.h"
#include "dist/communicator.h"
#include "model/config.h"
#include "model/weights.h"
#include "runner/model_runner.h"

namespace pagellm {

// `backend` and `weights`' storage must outlive the model. `linear_options` (e.g.
// --quantization int8) goes to QwenModel or HybridModel, which apply it to the same
// kinds of layers (attention/GDN projections, dense MLP, lm_head; not MoE experts).
StatusOr<std::unique_ptr<CausalLm>> CreateCausalLm(const ModelConfig& config, const ModelWeights& weights,
                                                   Backend& backend, int32_t max_num_tokens,
                                                   const LinearOptions& linear_options);

// Tensor x pipeline parallel: world = tensor_parallel_size * pipeline_parallel_size
// ranks, world rank = stage * tensor_parallel_size + tensor-parallel rank.
struct ParallelLayout {
  int tensor_parallel_size = 1;
  int pipeline_parallel_size = 1;
};

// Shards `weights` for `world`.rank() (model/shard_plan.h) and builds that rank's
// model, whose Forward takes part in the group's collectives: all-reduces inside its
// stage (over `world` when the stage is the whole world, else over a subgroup the
// model owns) and the stage-to-stage transfers. `shard_bytes` receives the shard's
// weight bytes.
StatusOr<std::unique_ptr<CausalLm>> CreateShardedCausalLm(const ModelConfig& config, const ModelWeights& weights,
                                                          Backend& backend, int32_t max_num_tokens,
                                                          const LinearOptions& linear_options,
                                                          dist::Communicator& world, ParallelLayout layout,
                                                          int64_t* shard_bytes);

// What rank 0 tells the other ranks once its memory plan is made: their KV cache
// (their own KV heads, same block count).
struct DistPlan {
  int64_t num_blocks = 0;  // including the block pool's null block
  int32_t block_size = 0;
  int32_t kv_dtype = 0;    // DType
};
Status SendDistPlan(dist::Communicator& comm, DistPlan plan);
StatusOr<DistPlan> ReceiveDistPlan(dist::Communicator& comm);

// Hybrid prefix-cache restores the model has performed: snapshots copied into a slot,
// and the tokens they stood for (the restored sequence's first new position in the
// following Forward). Counted where the copy happens because only an admitted request
// restores; the scheduler may look a snapshot up several times before admitting it.
struct StateRestoreCounts {
  int64_t num_restores = 0;
  int64_t num_restored_tokens = 0;
};
// Zeros for a model that is not a hybrid CausalLm from CreateCausalLm.
StateRestoreCounts GetStateRestoreCounts(const CausalLm& model);

}  // namespace pagellm
