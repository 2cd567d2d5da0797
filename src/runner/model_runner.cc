#include "runner/model_runner.h"

#include <algorithm>

namespace pagellm {

ModelRunner::ModelRunner(CausalLm& model, PagedKvCache& kv_cache, int32_t block_size)
    : model_(model), uses_state_slots_(model.state_bytes_per_slot() > 0), kv_cache_(kv_cache),
      block_size_(block_size) {
  logits_.vocab_size = static_cast<int32_t>(model.config().vocab_size);
}

void ModelRunner::BuildInput(const SchedulerOutput& out, bool all_positions) {
  token_ids_.clear();
  positions_.clear();
  slot_mapping_.clear();
  query_start_loc_.assign(1, 0);
  seq_lens_.clear();
  state_slots_.clear();
  logits_indices_.clear();
  logits_.scheduled_index.clear();
  logits_.positions.clear();
  max_blocks_per_seq_ = 1;
  for (const ScheduledRequest& s : out.scheduled) {
    max_blocks_per_seq_ = std::max(max_blocks_per_seq_, static_cast<int32_t>(s.block_ids.size()));
  }
  block_tables_.assign(out.scheduled.size() * static_cast<size_t>(max_blocks_per_seq_), 0);

  for (size_t i = 0; i < out.scheduled.size(); ++i) {
    const ScheduledRequest& s = out.scheduled[i];
    PAGELLM_CHECK(static_cast<int32_t>(s.new_token_ids.size()) == s.num_new_tokens);
    for (int32_t j = 0; j < s.num_new_tokens; ++j) {
      int32_t pos = s.num_computed_tokens + j;
      int32_t block = s.block_ids[static_cast<size_t>(pos / block_size_)];
      token_ids_.push_back(s.new_token_ids[static_cast<size_t>(j)]);
      positions_.push_back(pos);
      slot_mapping_.push_back(static_cast<int64_t>(block) * block_size_ + pos % block_size_);
      // The last real token's row, and one per draft behind it (speculative decoding).
      bool wanted = all_positions || (s.samples && j >= s.num_new_tokens - 1 - s.num_spec_tokens);
      if (wanted) {
        logits_indices_.push_back(static_cast<int32_t>(token_ids_.size()) - 1);
        logits_.scheduled_index.push_back(static_cast<int32_t>(i));
        logits_.positions.push_back(pos);
      }
    }
    query_start_loc_.push_back(static_cast<int32_t>(token_ids_.size()));
    if (uses_state_slots_) {
      PAGELLM_CHECK(s.state_slot >= 0);  // the scheduler gives every running request one
      state_slots_.push_back(s.state_slot);
    }
    seq_lens_.push_back(s.num_computed_tokens + s.num_new_tokens);
    std::copy(s.block_ids.begin(), s.block_ids.end(),
              block_tables_.begin() + static_cast<ptrdiff_t>(i) * max_blocks_per_seq_);
  }
}

StatusOr<const StepLogits*> ModelRunner::Execute(const SchedulerOutput& out, bool all_positions) {
  BuildInput(out, all_positions);
  ForwardInput input;
  input.token_ids = token_ids_;
  input.positions = positions_;
  input.slot_mapping = slot_mapping_;
  input.query_start_loc = query_start_loc_;
  input.seq_lens = seq_lens_;
  input.block_tables = block_tables_;
  input.max_blocks_per_seq = max_blocks_per_seq_;
  input.logits_indices = logits_indices_;
  input.state_slots = state_slots_;
  logits_.data.resize(logits_indices_.size() * static_cast<size_t>(logits_.vocab_size));
  if (!token_ids_.empty()) {
    // Restores before, saves after the forward pass (the order state_snapshot_cache.h relies on).
    for (const ScheduledRequest& s : out.scheduled) {
      if (s.restore_snapshot >= 0) model_.RestoreStateSnapshot(s.restore_snapshot, s.state_slot);
      if (s.checkpoint_snapshot >= 0) model_.SaveStateSnapshot(s.state_slot, s.checkpoint_snapshot);
    }
    PAGELLM_RETURN_IF_ERROR(model_.Forward(input, kv_cache_, logits_.data.data()));
    for (const ScheduledRequest& s : out.scheduled) {
      if (s.save_snapshot >= 0) model_.SaveStateSnapshot(s.state_slot, s.save_snapshot);
    }
  }
  return &logits_;
}

}  // namespace pagellm
