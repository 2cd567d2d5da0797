// ForwardInput: one step's flat, mixed batch as the model sees it (vLLM v1 style).
//
// The runner builds this from the scheduler's output; the model knows nothing of
// requests or scheduling. Sequences are laid out one after another in the flat token
// arrays: sequence s owns tokens [query_start_loc[s], query_start_loc[s+1]).
// A prefill chunk and a decode row are the same thing: a sequence with
// (query_start_loc[s+1] - query_start_loc[s]) new tokens whose keys/values go to
// `slot_mapping`, attending causally within the chunk and fully over the
// seq_lens[s] - num_new tokens already in the cache.
#pragma once

#include <cstdint>
#include <span>

namespace pagellm {

struct ForwardInput {
  std::span<const int32_t> token_ids;        // [num_tokens]
  std::span<const int32_t> positions;        // [num_tokens] absolute position in its sequence
  std::span<const int64_t> slot_mapping;     // [num_tokens] block_id * block_size + offset
  std::span<const int32_t> query_start_loc;  // [num_seqs + 1], query_start_loc[0] == 0
  std::span<const int32_t> seq_lens;         // [num_seqs] context length after this step
  std::span<const int32_t> block_tables;     // [num_seqs, max_blocks_per_seq] row-major
  int32_t max_blocks_per_seq = 0;
  std::span<const int32_t> logits_indices;   // token rows whose logits are wanted, ascending
  // Hybrid models (Qwen3-Next / Qwen3.5) only: [num_seqs] recurrent-state slot of each
  // sequence in the HybridStateCache. A slot is reset when its sequence's first new
  // token is at position 0, and carries the GDN state across chunks/steps otherwise.
  // Empty for dense and MoE models.
  std::span<const int32_t> state_slots;

  int32_t num_tokens() const { return static_cast<int32_t>(token_ids.size()); }
  int32_t num_seqs() const { return static_cast<int32_t>(seq_lens.size()); }
};

}  // namespace pagellm
