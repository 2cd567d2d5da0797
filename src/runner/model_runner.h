// ModelRunner: turns a SchedulerOutput into the model's flat ForwardInput, runs the
// forward pass, and hands back the logits rows the sampler needs.
//
//   ModelRunner runner(*model, *kv_cache, /*block_size=*/16);
//   PAGELLM_ASSIGN_OR_RETURN(const StepLogits* logits, runner.Execute(sched_out));
//   // logits->rows(r) belongs to sched_out.scheduled[logits->scheduled_index[r]]
//
// This is the only place where scheduling state (block ids, token counts) meets device
// memory (the KV cache). Host-side arrays are reused across steps: no per-step
// allocation once the largest batch has been seen.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/paged_kv_cache.h"
#include "common/status.h"
#include "model/arch/qwen_model.h"
#include "model/forward_input.h"
#include "sched/scheduler_output.h"

namespace pagellm {

struct StepLogits {
  int32_t vocab_size = 0;
  std::vector<float> data;              // [num_rows, vocab_size]
  std::vector<int32_t> scheduled_index;  // [num_rows] index into SchedulerOutput::scheduled
  std::vector<int32_t> positions;       // [num_rows] token position whose next token this predicts
  int32_t num_rows() const { return static_cast<int32_t>(scheduled_index.size()); }
  const float* row(int32_t r) const { return data.data() + static_cast<size_t>(r) * vocab_size; }
};

class ModelRunner {
 public:
  ModelRunner(QwenModel& model, PagedKvCache& kv_cache, int32_t block_size);

  // Runs one step. With `all_positions`, returns a logits row for every computed token
  // (prompt scoring); otherwise one row per scheduled request that samples.
  StatusOr<const StepLogits*> Execute(const SchedulerOutput& out, bool all_positions = false);

 private:
  void BuildInput(const SchedulerOutput& out, bool all_positions);

  QwenModel& model_;
  PagedKvCache& kv_cache_;
  int32_t block_size_;
  // Reused host arrays behind ForwardInput's spans.
  std::vector<int32_t> token_ids_, positions_, query_start_loc_, seq_lens_, block_tables_, logits_indices_;
  std::vector<int64_t> slot_mapping_;
  int32_t max_blocks_per_seq_ = 0;
  StepLogits logits_;
};

}  // namespace pagellm
