// MemoryPlan: how much memory the weights, the activation workspace and the KV cache
// get, decided once at start-up (vLLM's "Available KV cache memory" / "Maximum
// concurrency" lines).
//
//   PAGELLM_ASSIGN_OR_RETURN(MemoryPlan plan, PlanMemory(inputs));
//   PLOG_INFO("{}", plan.Summary());
//
// The KV pool is either exactly --kv-cache-memory bytes, or the fraction
// --gpu-memory-utilization of the memory available to the process (on CPU: the
// cgroup limit or MemTotal, whichever is smaller) minus weights and workspace.
// Refuses, with the numbers and what to change, when one request of max_model_len
// tokens cannot fit.
// Hybrid models (Qwen3.5 / Qwen3-Next) also keep per-sequence recurrent state (a GDN
// state slot) and, with prefix caching, snapshots of it. Both are carved out of the
// same budget before the KV blocks, like vLLM sizes its mamba pages from memory rather
// than from --max-num-seqs:
//   * state slots = min(--max-num-seqs, what the budget holds besides one max_model_len
//     request's blocks). Slots bound concurrency, so "Maximum concurrency" is
//     min(slots, KV tokens / max_model_len) (vLLM counts a mamba page per request too).
//   * snapshots (unless --hybrid-state-snapshots N) = 25% of what the slots leave, at
//     most one per snapshot interval of the KV blocks that remain (a snapshot is only
//     usable while its prefix's blocks are cached), at least kMinStateSnapshots when
//     they fit. 25%: snapshots only pay off on prefix hits, while KV blocks serve every
//     request, so the KV keeps at least three quarters of what the slots leave.
// Refuses, naming the numbers, when not even one sequence (slot + blocks) fits.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace pagellm {

struct MemoryPlanInputs {
  int64_t weight_bytes = 0;           // as loaded (the file's tensors)
  int64_t prepared_weight_bytes = 0;  // the backend's packed/quantized copies of them
  int64_t released_weight_bytes = 0;  // file pages dropped because a copy replaced them
  int64_t workspace_bytes = 0;        // activations for max_num_batched_tokens rows
  int64_t kv_bytes_per_block = 0;     // all layers, K and V
  int32_t block_size = 16;
  int32_t max_model_len = 0;
  int64_t kv_cache_memory_bytes = 0;  // 0 => use the fraction
  double memory_utilization = 0.9;
  int64_t device_memory_bytes = 0;    // total memory the fraction applies to
  int64_t state_bytes_per_slot = 0;   // hybrid models: GDN conv + recurrent state of one sequence; 0 otherwise
  int32_t max_num_seqs = 1;           // hybrid models: upper bound on state slots
  // Hybrid prefix caching: plan snapshot entries (same size as a slot), one taken every
  // state_snapshot_interval_blocks blocks. num_state_snapshots > 0 fixes their count
  // (--hybrid-state-snapshots); 0 sizes it from the budget.
  bool plan_state_snapshots = false;
  int32_t num_state_snapshots = 0;
  int32_t state_snapshot_interval_blocks = 0;
  // Speculative decoding on a hybrid model: every state slot gets a checkpoint entry
  // (the state before a verification, restored when a draft is rejected).
  bool spec_checkpoints = false;
  std::string weight_formats;  // per tensor group (WeightFormatSummary); logged with the plan
};

// Smallest snapshot count the automatic sizing gives, when they fit: fewer would let
// every new prefix evict the one before it.
inline constexpr int32_t kMinStateSnapshots = 4;

struct MemoryPlan {
  int64_t weight_bytes = 0;           // loaded - released + prepared copies
  int64_t prepared_weight_bytes = 0;  // of which the backend's copies
  int64_t released_weight_bytes = 0;  // file pages the copies replaced (not counted)
  int64_t workspace_bytes = 0;
  int64_t kv_cache_bytes = 0;
  int32_t num_blocks = 0;  // usable blocks (the block pool adds its null block)
  int32_t block_size = 16;
  int32_t max_model_len = 0;
  int64_t state_bytes_per_slot = 0;
  int32_t num_state_slots = 0;      // <= max_num_seqs
  int32_t max_num_seqs = 0;         // what was asked for (hybrid models)
  int32_t num_state_snapshots = 0;
  bool state_snapshots_auto = false;  // sized from the budget, not --hybrid-state-snapshots
  int32_t state_snapshot_interval_blocks = 0;
  int32_t num_spec_checkpoints = 0;  // == num_state_slots with speculative decoding, else 0
  std::string weight_formats;
  int64_t loaded_weight_bytes = 0;  // MemoryPlanInputs::weight_bytes (before copies replaced pages)

  // Slots and snapshots together: what is taken from the budget before KV blocks.
  int64_t state_cache_bytes() const {
    return state_bytes_per_slot * (num_state_slots + num_state_snapshots + num_spec_checkpoints);
  }
  int64_t num_kv_tokens() const { return static_cast<int64_t>(num_blocks) * block_size; }
  // How many max_model_len requests fit at once (vLLM's "Maximum concurrency"); for
  // hybrid models also at most one per state slot.
  double max_concurrency() const;
  // One line for the start-up log.
  std::string Summary() const;
};

StatusOr<MemoryPlan> PlanMemory(const MemoryPlanInputs& inputs);

// Memory this process may use on the CPU: min(MemTotal, cgroup memory.max).
int64_t CpuMemoryBytes();

}  // namespace pagellm
