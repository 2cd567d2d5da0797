// TokenBudget: the per-step BATCH decision — how many tokens each request may compute
// in this step, given the step's token budget and the prefill limits. It knows nothing
// about KV memory (that is CapacityScheduler's decision; TensorRT-LLM keeps the two
// apart for the same reason: each can be reasoned about and tested alone).
//
//   TokenBudget budget(limits, /*decodes_running=*/true);  // one per step
//   int32_t num_new = budget.Choose(num_uncomputed);       // 0 => skip this request
//   if (num_new > 0 && kv_fits) budget.Charge(num_new, num_uncomputed);
//
// A request is "prefilling" when it has more than one uncomputed token (a decode has
// exactly one: the last sampled token). Prefill tokens are capped twice: per request
// (long_prefill_token_threshold, vLLM's knob) and per step while decodes are running
// (max_prefill_tokens_per_step), which bounds the step's latency and hence the decodes'
// inter-token latency. With no decode in the step the per-step cap is lifted: nobody
// waits on the step but the prompts themselves, so a smaller step would only delay them.
#pragma once

#include <cstdint>

#include "common/status.h"

namespace pagellm {

struct BatchLimits {
  int32_t max_num_batched_tokens = 2048;     // tokens computed per step, all requests
  int32_t max_num_seqs = 256;                // running requests at once
  bool enable_chunked_prefill = true;        // else a prompt is computed whole or not at all
  int32_t long_prefill_token_threshold = 0;  // per-request prefill chunk cap; 0 = off
  // Prefill tokens per step, all requests, in steps that also carry decodes; 0 = off.
  // Without chunked prefill a prompt cannot be split, so the step's first prompt may
  // exceed it (otherwise a prompt longer than the cap would never start).
  int32_t max_prefill_tokens_per_step = 0;

  // `max_model_len`: longest sequence that must remain schedulable.
  Status Validate(int32_t max_model_len) const;
};

class TokenBudget {
 public:
  // `decodes_running`: whether the step carries decodes, i.e. whether
  // max_prefill_tokens_per_step applies.
  explicit TokenBudget(const BatchLimits& limits, bool decodes_running = true);

  // Tokens to compute this step for a request with `num_uncomputed_tokens` (>= 1)
  // left; 0 means it cannot be scheduled in this step.
  int32_t Choose(int32_t num_uncomputed_tokens) const;
  // Records that `num_new_tokens` of such a request were scheduled.
  void Charge(int32_t num_new_tokens, int32_t num_uncomputed_tokens);
  // Speculative draft tokens scheduled behind a request's real ones: they take step
  // budget but are decode work, not prefill (no prefill cap).
  void ChargeDrafts(int32_t num_draft_tokens) { num_tokens_left_ -= num_draft_tokens; }

  int32_t num_tokens_left() const { return num_tokens_left_; }
  int32_t num_prefill_tokens_left() const { return num_prefill_tokens_left_; }
  int32_t num_scheduled_tokens() const { return limits_.max_num_batched_tokens - num_tokens_left_; }
  int32_t num_scheduled_prefill_tokens() const { return num_scheduled_prefill_tokens_; }

 private:
  BatchLimits limits_;
  int32_t num_tokens_left_;
  int32_t num_prefill_tokens_left_;  // INT32_MAX when uncapped; may go negative (see above)
  int32_t num_scheduled_prefill_tokens_ = 0;
};

}  // namespace pagellm
