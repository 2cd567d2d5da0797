// ParallelRuntime: what a (possibly) sharded forward pass keeps of its tensor x pipeline
// parallel place (model/shard_plan.h): the group settings, the layers its stage runs,
// the stage-to-stage link and the vocabulary-parallel lm_head. QwenModel and HybridModel
// hold one each.
//
//   PAGELLM_ASSIGN_OR_RETURN(ParallelRuntime par, MakeParallelRuntime(tp, config));
//   for (int64_t l = par.layers.first; l < par.layers.end; ++l) ...
//   if (par.head != nullptr) ... gather the logits; if (par.stage != nullptr) ... transfers
#pragma once

#include <memory>

#include "common/status.h"
#include "model/arch/sharded_lm_head.h"
#include "model/arch/stage_transfer.h"
#include "model/config.h"
#include "model/shard_plan.h"

namespace pagellm {

struct ParallelRuntime {
  TensorParallelism tp;                  // lm_head_rows filled in (the whole vocabulary alone)
  LayerRange layers;                     // the layers run here (all without a pipeline)
  std::unique_ptr<StageTransfer> stage;  // pipeline parallel only
  std::unique_ptr<ShardedLmHead> head;   // tensor parallel, last stage only
};

// InvalidArgument when the stage's layer range is not a non-empty part of the model's.
StatusOr<ParallelRuntime> MakeParallelRuntime(const TensorParallelism& tp, const ModelConfig& config);

}  // namespace pagellm
