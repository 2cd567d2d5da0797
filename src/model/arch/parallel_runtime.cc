#include "model/arch/parallel_runtime.h"

namespace pagellm {

StatusOr<ParallelRuntime> MakeParallelRuntime(const TensorParallelism& tp, const ModelConfig& c) {
  ParallelRuntime par;
  par.tp = tp;
  if (par.tp.lm_head_rows <= 0) par.tp.lm_head_rows = c.vocab_size;
  PAGELLM_ASSIGN_OR_RETURN(par.layers, CheckStageLayers(tp.pipeline, c.num_hidden_layers));
  if (tp.pipeline.world != nullptr) par.stage = std::make_unique<StageTransfer>(tp.pipeline);
  if (tp.comm != nullptr && tp.pipeline.last()) {
    par.head = std::make_unique<ShardedLmHead>(*tp.comm, c.vocab_size, par.tp.lm_head_rows);
  }
  return par;
}

}  // namespace pagellm
