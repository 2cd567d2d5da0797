#include "runner/model_runner.h"

#include <algorithm>
#include <cstring>

namespace pagellm {

ModelRunner::ModelRunner(CausalLm& model, PagedKvCache& kv_cache, int32_t block_size)
    : model_(model), uses_state_slots_(model.state_bytes_per_slot() > 0), kv_cache_(kv_cache), input_(block_size) {
  logits_.vocab_size = static_cast<int32_t>(model.config().vocab_size);
}

ForwardInput ModelRunner::BuildInput(const SchedulerOutput& out, bool all_positions) {
  input_.Clear();
  logits_.scheduled_index.clear();
  logits_.positions.clear();
  for (size_t i = 0; i < out.scheduled.size(); ++i) {
    const ScheduledRequest& s = out.scheduled[i];
    const int32_t n = s.num_new_tokens;
    PAGELLM_CHECK(static_cast<int32_t>(s.new_token_ids.size()) == n);
    // The last real token's row, and one per draft behind it (speculative decoding).
    const int32_t num_logit_rows = all_positions ? n : s.samples ? std::min(n, s.num_spec_tokens + 1) : 0;
    if (uses_state_slots_) PAGELLM_CHECK(s.state_slot >= 0);  // the scheduler gives every running request one
    input_.AddSequence(s.new_token_ids, s.num_computed_tokens, s.block_ids, num_logit_rows,
                       uses_state_slots_ ? s.state_slot : -1);
    for (int32_t j = n - num_logit_rows; j < n; ++j) {
      logits_.scheduled_index.push_back(static_cast<int32_t>(i));
      logits_.positions.push_back(s.num_computed_tokens + j);
    }
  }
  return input_.Build();
}

Status ModelRunner::ReserveLogitRows(int64_t rows) {
  if (rows <= logit_rows_capacity_) return OkStatus();
  PAGELLM_ASSIGN_OR_RETURN(logits_buffer_, AlignedBuffer::Allocate(static_cast<size_t>(LogitBytes(rows, logits_.vocab_size))));
  std::memset(logits_buffer_.data(), 0, logits_buffer_.size());  // the page faults, now rather than mid-run
  logits_.data = logits_buffer_.as<float>();
  logit_rows_capacity_ = rows;
  return OkStatus();
}

StatusOr<const StepLogits*> ModelRunner::Execute(const SchedulerOutput& out, bool all_positions) {
  const ForwardInput input = BuildInput(out, all_positions);
  const int64_t rows = static_cast<int64_t>(input.logits_indices.size());
  if (rows > logit_rows_capacity_) PAGELLM_RETURN_IF_ERROR(ReserveLogitRows(std::max(rows, logit_rows_capacity_ * 3 / 2)));
  if (input.num_tokens() > 0) {
    // Restores before, saves after the forward pass (the order state_snapshot_cache.h relies on).
    for (const ScheduledRequest& s : out.scheduled) {
      if (s.restore_snapshot >= 0) model_.RestoreStateSnapshot(s.restore_snapshot, s.state_slot);
      if (s.checkpoint_snapshot >= 0) model_.SaveStateSnapshot(s.state_slot, s.checkpoint_snapshot);
    }
    PAGELLM_RETURN_IF_ERROR(model_.Forward(input, kv_cache_, logits_.data));
    for (const ScheduledRequest& s : out.scheduled) {
      if (s.save_snapshot >= 0) model_.SaveStateSnapshot(s.state_slot, s.save_snapshot);
    }
  }
  return &logits_;
}

}  // namespace pagellm
