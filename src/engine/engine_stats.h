// EngineStats: counters the engine keeps for logs and Prometheus metrics (vLLM names
// in comments). Updated on the engine thread only; readers copy it under the
// LlmEngine's lock.
#pragma once

#include <cstdint>
#include <vector>

namespace pagellm {

// Hybrid models' GDN state cache (Qwen3.5 / Qwen3-Next); all zero for other models,
// whose /metrics then has no pagellm:hybrid_* families. vLLM has no such metrics: the
// names follow its style under a pagellm: prefix.
struct HybridStateStats {
  int32_t num_state_slots = 0;        // capacity (> 0 marks a hybrid model)
  int32_t num_state_slots_used = 0;   // pagellm:hybrid_state_slots_in_use
  int32_t num_snapshots = 0;          // pagellm:hybrid_state_snapshots_capacity
  int32_t num_snapshots_used = 0;     // pagellm:hybrid_state_snapshots_in_use (saved or being saved)
  int64_t snapshot_hits = 0;          // pagellm:hybrid_state_snapshot_hits_total (restores)
  int64_t snapshot_hit_tokens = 0;    // pagellm:hybrid_state_snapshot_restored_tokens_total
  int64_t snapshot_saves = 0;         // pagellm:hybrid_state_snapshot_saves_total
  int64_t snapshot_evictions = 0;     // pagellm:hybrid_state_snapshot_evictions_total
};

// Speculative decoding (vLLM's vllm:spec_decode_* counters).
struct SpecDecodeStats {
  int64_t num_drafts = 0;           // vllm:spec_decode_num_drafts_total (requests x steps with drafts)
  int64_t num_draft_tokens = 0;     // vllm:spec_decode_num_draft_tokens_total
  int64_t num_accepted_tokens = 0;  // vllm:spec_decode_num_accepted_tokens_total
  std::vector<int64_t> accepted_per_pos;  // vllm:spec_decode_num_accepted_tokens_per_pos_total{position}
  // Decode-only steps (every request one real token, plus its drafts): forward seconds
  // with drafts (verification) and without, and the draft model's proposing time: what
  // the verification-overhead figure compares (logged at exit, engine_spec.cc).
  int64_t num_verify_steps = 0, num_plain_decode_steps = 0;
  double verify_forward_s = 0.0, plain_decode_forward_s = 0.0;
  int64_t verify_batch_sum = 0, plain_decode_batch_sum = 0;  // requests over those steps
  int64_t num_draft_model_calls = 0;
  double draft_model_s = 0.0;
};

struct EngineStats {
  int32_t num_running = 0;             // vllm:num_requests_running
  int32_t num_waiting = 0;             // vllm:num_requests_waiting
  int64_t num_waiting_tokens = 0;      // tokens the waiting requests still have to compute
  double kv_cache_usage = 0.0;         // vllm:kv_cache_usage_perc (0..1)
  int64_t prompt_tokens_total = 0;     // vllm:prompt_tokens_total
  int64_t generation_tokens_total = 0; // vllm:generation_tokens_total
  int64_t num_preemptions_total = 0;   // vllm:num_preemptions_total
  int64_t prefix_cache_queries = 0;    // vllm:prefix_cache_queries_total (tokens)
  int64_t prefix_cache_hits = 0;       // vllm:prefix_cache_hits_total (tokens)
  int64_t num_steps = 0;
  // Where the engine thread's step time goes (pagellm:engine_step_seconds_total{phase}):
  // scheduling, the model's forward pass, sampling (logits to tokens, stop checks,
  // scheduler update) and handing the deltas to their callbacks.
  double step_schedule_s = 0.0, step_forward_s = 0.0, step_sample_s = 0.0, step_output_s = 0.0;
  int64_t last_step_tokens = 0;        // vllm:iteration_tokens_total observation
  // pagellm:prefill_token_cap: prefill tokens the next step may take while requests
  // decode (step_cost_model.h); 0 = no cap (only --max-num-batched-tokens).
  int32_t prefill_token_cap = 0;
  HybridStateStats hybrid;
  bool spec_decode_enabled = false;
  SpecDecodeStats spec;
};

}  // namespace pagellm
