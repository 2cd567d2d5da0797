#include "sched/token_budget.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

namespace pagellm {

Status BatchLimits::Validate(int32_t max_model_len) const {
  if (max_num_batched_tokens < 1) {
    return InvalidArgumentError(
        fmt::format("max_num_batched_tokens must be >= 1, got {}", max_num_batched_tokens));
  }
  if (max_num_seqs < 1) {
    return InvalidArgumentError(fmt::format("max_num_seqs must be >= 1, got {}", max_num_seqs));
  }
  if (long_prefill_token_threshold < 0 || max_prefill_tokens_per_step < 0) {
    return InvalidArgumentError("long_prefill_token_threshold and max_prefill_tokens_per_step "
                                "must be >= 0 (0 disables them)");
  }
  // Without chunking a whole prompt (or a recomputed prompt + output) must fit in one
  // step, or it could never run. The prefill cap cannot block it: a step's first prompt
  // is exempt from it.
  if (!enable_chunked_prefill && max_num_batched_tokens < max_model_len) {
    return InvalidArgumentError(fmt::format(
        "without chunked prefill the per-step token limit ({}) must be >= max_model_len ({})",
        max_num_batched_tokens, max_model_len));
  }
  return OkStatus();
}

TokenBudget::TokenBudget(const BatchLimits& limits, bool decodes_running)
    : limits_(limits),
      num_tokens_left_(limits.max_num_batched_tokens),
      num_prefill_tokens_left_(decodes_running && limits.max_prefill_tokens_per_step > 0
                                   ? limits.max_prefill_tokens_per_step
                                   : std::numeric_limits<int32_t>::max()) {}

int32_t TokenBudget::Choose(int32_t num_uncomputed_tokens) const {
  PAGELLM_CHECK(num_uncomputed_tokens >= 1);
  const bool is_prefill = num_uncomputed_tokens > 1;
  int32_t num_wanted = num_uncomputed_tokens;
  int32_t limit = num_tokens_left_;
  if (is_prefill) {
    if (limits_.enable_chunked_prefill && limits_.long_prefill_token_threshold > 0) {
      num_wanted = std::min(num_wanted, limits_.long_prefill_token_threshold);
    }
    // NOTE: an unsplittable prompt is exempt from the cap when it is the step's first
    // prefill, so prompts keep progressing (one per step) however small the cap.
    const bool exempt = !limits_.enable_chunked_prefill && num_scheduled_prefill_tokens_ == 0;
    if (!exempt) limit = std::min(limit, num_prefill_tokens_left_);
  }
  if (num_wanted <= limit) return num_wanted;
  if (!is_prefill || !limits_.enable_chunked_prefill) return 0;
  return std::max(limit, 0);
}

void TokenBudget::Charge(int32_t num_new_tokens, int32_t num_uncomputed_tokens) {
  PAGELLM_CHECK(num_new_tokens >= 1 && num_new_tokens <= num_tokens_left_);
  num_tokens_left_ -= num_new_tokens;
  if (num_uncomputed_tokens <= 1) return;
  num_scheduled_prefill_tokens_ += num_new_tokens;
  if (num_prefill_tokens_left_ != std::numeric_limits<int32_t>::max()) {
    // Only the exempt first prompt (chunking off) may overdraw the prefill share.
    PAGELLM_CHECK(num_new_tokens <= num_prefill_tokens_left_ || !limits_.enable_chunked_prefill);
    num_prefill_tokens_left_ -= num_new_tokens;
  }
}

}  // namespace pagellm
