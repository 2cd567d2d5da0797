// StageTransfer: a pipeline stage's two exchanges per forward step (model/shard_plan.h
// PipelineStage): the hidden states in from the previous stage (or the embedding on the
// first) and out to the next; and the logits, which the last stage's tensor-parallel
// rank 0 sends to world rank 0, where the sampler runs.
//
//   StageTransfer io(tp.pipeline);
//   if (io.first()) embed(...); else PAGELLM_RETURN_IF_ERROR(io.ReceiveHidden(hidden, t * h));
//   ... this stage's layers ...
//   if (!io.last()) return io.SendHidden(hidden, t * h, logits, num_logits * vocab);
//   float* out = io.LogitsBuffer(logits, num_logits * vocab);  // lm_head writes here
//   ... lm_head ...
//   return io.SendLogits(num_logits * vocab);
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "model/shard_plan.h"

namespace pagellm {

// The stage's layer range [first_layer, end_layer or num_layers); InvalidArgument when
// it is empty or out of [0, num_layers).
StatusOr<LayerRange> CheckStageLayers(const PipelineStage& stage, int64_t num_layers);

class StageTransfer {
 public:
  explicit StageTransfer(const PipelineStage& stage) : stage_(stage) {}
  bool first() const { return stage_.first(); }
  bool last() const { return stage_.last(); }

  // hidden: [count] fp32, from the previous stage's rank.
  Status ReceiveHidden(float* hidden, int64_t count);
  // Sends this stage's output on; world rank 0 then waits for the step's logits
  // (`logits` [logits_count]) from the last stage.
  Status SendHidden(const float* hidden, int64_t count, float* logits, int64_t logits_count);
  // The last stage: where its lm_head puts the gathered logits: the caller's buffer, or
  // (on the rank that forwards them to rank 0) one of its own.
  float* LogitsBuffer(float* logits, int64_t logits_count);
  // The last stage's sender: the logits LogitsBuffer handed out go to rank 0.
  Status SendLogits(int64_t logits_count);

 private:
  PipelineStage stage_;
  std::vector<float> logits_;  // the sender's, reused across steps
};

}  // namespace pagellm
