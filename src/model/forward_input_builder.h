// ForwardInputBuilder: lays out a step's flat ForwardInput sequence by sequence and owns
// the host arrays its spans point into.
//
//   ForwardInputBuilder builder(/*block_size=*/16);  // one per KV cache, kept across steps
//   builder.Clear();
//   int32_t row0 = builder.AddSequence(new_tokens, /*first_position=*/40, block_ids,
//                                      /*num_logit_rows=*/1);
//   ForwardInput input = builder.Build();  // valid until the next Clear / AddSequence
//
// Every caller that feeds a model (ModelRunner, the MTP proposer, benchmarks) lays a
// sequence out the same way: tokens at consecutive positions, slot = block * block_size +
// offset, logits for its last rows. Keeping that in one place keeps them from drifting.
// NOTE: the arrays are cleared, never freed, so once the largest batch has been seen a
// step allocates nothing (the engine's hot path).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/forward_input.h"

namespace pagellm {

class ForwardInputBuilder {
 public:
  // `block_size`: tokens per KV block of the cache the input will run on (> 0).
  explicit ForwardInputBuilder(int32_t block_size);

  // Starts an empty batch (keeps the arrays' capacity).
  void Clear();

  // Appends one sequence: token_ids[j] at position first_position + j, its key/value to
  // slot block_ids[pos / block_size] * block_size + pos % block_size; seq_len becomes
  // first_position + token_ids.size(). Its last `num_logit_rows` rows want logits.
  // `state_slot` >= 0 gives the sequence a recurrent-state slot (hybrid models): either
  // every sequence of a batch has one or none has.
  // Preconditions: 0 <= num_logit_rows <= token_ids.size(); block_ids cover every
  // position up to seq_len. Returns the flat row index of token_ids[0].
  int32_t AddSequence(std::span<const int32_t> token_ids, int32_t first_position,
                      std::span<const int32_t> block_ids, int32_t num_logit_rows, int32_t state_slot = -1);

  // Lays out block_tables ([num_seqs, max_blocks_per_seq], each row zero-padded to the
  // longest sequence's block count, at least 1) and returns views of this builder's
  // arrays. They stay valid until the next Clear() or AddSequence().
  ForwardInput Build();

  int32_t num_tokens() const { return static_cast<int32_t>(token_ids_.size()); }
  int32_t num_seqs() const { return static_cast<int32_t>(seq_lens_.size()); }

 private:
  int32_t block_size_;
  std::vector<int32_t> token_ids_, positions_, query_start_loc_, seq_lens_, logits_indices_, state_slots_;
  std::vector<int64_t> slot_mapping_;
  // Each sequence's block ids back to back ([num_seqs] counts): the padded width is known
  // only once the last sequence is in, so Build() lays the table out.
  std::vector<int32_t> block_ids_, num_blocks_;
  std::vector<int32_t> block_tables_;
  int32_t max_blocks_per_seq_ = 1;
};

}  // namespace pagellm
