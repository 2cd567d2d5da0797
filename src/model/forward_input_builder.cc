#include "model/forward_input_builder.h"

#include <algorithm>

#include "common/status.h"

namespace pagellm {

ForwardInputBuilder::ForwardInputBuilder(int32_t block_size) : block_size_(block_size) {
  PAGELLM_CHECK(block_size_ > 0);
  Clear();
}

void ForwardInputBuilder::Clear() {
  token_ids_.clear();
  positions_.clear();
  slot_mapping_.clear();
  query_start_loc_.assign(1, 0);
  seq_lens_.clear();
  logits_indices_.clear();
  state_slots_.clear();
  block_ids_.clear();
  num_blocks_.clear();
  max_blocks_per_seq_ = 1;
}

int32_t ForwardInputBuilder::AddSequence(std::span<const int32_t> token_ids, int32_t first_position,
                                         std::span<const int32_t> block_ids, int32_t num_logit_rows,
                                         int32_t state_slot) {
  const int32_t n = static_cast<int32_t>(token_ids.size());
  const int32_t seq_len = first_position + n;
  PAGELLM_CHECK(first_position >= 0 && num_logit_rows >= 0 && num_logit_rows <= n);
  PAGELLM_CHECK(static_cast<int64_t>(block_ids.size()) * block_size_ >= seq_len);
  // All or none: state_slots is either empty or [num_seqs].
  PAGELLM_CHECK(state_slot >= 0 ? state_slots_.size() == seq_lens_.size() : state_slots_.empty());
  const int32_t first_row = num_tokens();
  for (int32_t j = 0; j < n; ++j) {
    const int32_t pos = first_position + j;
    const int32_t block = block_ids[static_cast<size_t>(pos / block_size_)];
    token_ids_.push_back(token_ids[static_cast<size_t>(j)]);
    positions_.push_back(pos);
    slot_mapping_.push_back(static_cast<int64_t>(block) * block_size_ + pos % block_size_);
  }
  for (int32_t row = first_row + n - num_logit_rows; row < first_row + n; ++row) logits_indices_.push_back(row);
  query_start_loc_.push_back(num_tokens());
  seq_lens_.push_back(seq_len);
  if (state_slot >= 0) state_slots_.push_back(state_slot);
  block_ids_.insert(block_ids_.end(), block_ids.begin(), block_ids.end());
  num_blocks_.push_back(static_cast<int32_t>(block_ids.size()));
  max_blocks_per_seq_ = std::max(max_blocks_per_seq_, num_blocks_.back());
  return first_row;
}

ForwardInput ForwardInputBuilder::Build() {
  block_tables_.assign(num_blocks_.size() * static_cast<size_t>(max_blocks_per_seq_), 0);
  auto src = block_ids_.begin();
  for (size_t s = 0; s < num_blocks_.size(); ++s) {
    std::copy(src, src + num_blocks_[s], block_tables_.begin() + static_cast<ptrdiff_t>(s) * max_blocks_per_seq_);
    src += num_blocks_[s];
  }
  return {.token_ids = token_ids_, .positions = positions_, .slot_mapping = slot_mapping_,
          .query_start_loc = query_start_loc_, .seq_lens = seq_lens_, .block_tables = block_tables_,
          .max_blocks_per_seq = max_blocks_per_seq_, .logits_indices = logits_indices_, .state_slots = state_slots_};
}

}  // namespace pagellm
