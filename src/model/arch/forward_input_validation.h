// ValidateForwardInput: checks a ForwardInput against the model and cache it will run on.
//
// Every violation is a caller (runner/scheduler) bug that would otherwise read or write
// out of bounds inside a kernel, so it is reported as InvalidArgument naming the field.
//
//   ForwardLimits limits{.max_num_tokens = 2048, .vocab_size = 151936, ...};
//   PAGELLM_RETURN_IF_ERROR(ValidateForwardInput(input, limits));
#pragma once

#include <cstdint>

#include "common/status.h"
#include "model/forward_input.h"

namespace pagellm {

struct ForwardLimits {
  int64_t max_num_tokens = 0;   // workspace rows
  int64_t vocab_size = 0;       // token ids must be < this
  int64_t max_positions = 0;    // RoPE table rows: positions must be < this
  int64_t num_blocks = 0;       // KV cache blocks: block ids must be < this
  int64_t block_size = 0;       // tokens per block
};

// Checks sizes, query_start_loc monotonicity, positions == seq_len - num_new + i,
// id/slot/block ranges, block-table coverage of every seq_len, logits_indices
// ascending and in range.
Status ValidateForwardInput(const ForwardInput& input, const ForwardLimits& limits);

}  // namespace pagellm
