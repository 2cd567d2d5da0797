// SchedulerOutput: what one step computes, produced by Scheduler::Schedule() and
// consumed by the runner (to build ForwardInput) and by Scheduler::UpdateFromOutput().
//
//   SchedulerOutput out = scheduler.Schedule();
//   for (const ScheduledRequest& s : out.scheduled) {
//     // tokens s.new_token_ids go to positions [s.num_computed_tokens,
//     // s.num_computed_tokens + s.num_new_tokens), KV slots from s.block_ids
//   }
//
// Unlike vLLM's diff-based output this sends each scheduled request's full block table
// and its new token ids every step: simpler for the runner, and cheap at our scale
// (a few hundred ints per request). Units are tokens unless a name says blocks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pagellm {

struct ScheduledRequest {
  std::string request_id;
  // Tokens whose KV is computed this step (a decode: 1; a prefill chunk: its length).
  int32_t num_new_tokens = 0;
  // Tokens already in the KV cache before this step, including prefix-cache hits;
  // the new tokens sit at positions [num_computed_tokens, num_computed_tokens + num_new_tokens).
  int32_t num_computed_tokens = 0;
  // [num_new_tokens] the token ids at those positions (prompt or previously sampled).
  std::vector<int32_t> new_token_ids;
  // Full block table, [ceil((num_computed_tokens + num_new_tokens) / block_size)] block
  // ids at least; entry i holds positions [i * block_size, (i + 1) * block_size).
  std::vector<int32_t> block_ids;
  // True iff this step reaches the end of the known tokens, so the last new token's
  // logits are sampled. False for a prefill chunk that stops inside the prompt.
  bool samples = false;
  // True on the first step after admission or after resuming from preemption (the
  // runner must drop any per-request state it kept, e.g. penalties' token counts).
  bool is_new = false;
  // Hybrid models: the recurrent-state slot the request holds (the model resets it when
  // num_computed_tokens == 0 and continues it otherwise); -1 for attention-only models.
  int32_t state_slot = -1;
  // Hybrid prefix caching (sched/state_snapshot_cache.h): copy snapshot
  // `restore_snapshot` into the slot before the forward pass (a prefix hit resumes from
  // it), and/or copy the slot into snapshot `save_snapshot` after it (this step ends
  // at a snapshot boundary). -1: nothing to do.
  int32_t restore_snapshot = -1;
  int32_t save_snapshot = -1;
  // Speculative decoding: the last num_spec_tokens of new_token_ids are drafts (unknown
  // to the sequence until verified); the runner returns logits for them and for the
  // real token before them (num_spec_tokens + 1 rows). Hybrid models: copy the slot into
  // snapshot `checkpoint_snapshot` after any restore and before the forward pass, so a
  // rejected draft can be undone (Request::restore_checkpoint).
  int32_t num_spec_tokens = 0;
  int32_t checkpoint_snapshot = -1;
};

struct SchedulerOutput {
  std::vector<ScheduledRequest> scheduled;  // running requests first, then admitted ones
  int32_t total_num_new_tokens = 0;         // sum of num_new_tokens <= max_num_batched_tokens
  // Requests preempted in this step (by recompute); they are back in the waiting queue.
  std::vector<std::string> preempted_ids;
  // Requests that finished or were aborted since the previous Schedule(); their KV
  // blocks are already released and the runner may drop their state.
  std::vector<std::string> finished_ids;
};

}  // namespace pagellm
