// EngineConfig: everything the engine is built from, named after vLLM's engine args
// (`vllm serve --max-model-len ...` -> max_model_len), so CLI flags map one to one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace pagellm {

struct EngineConfig {
  // Model.
  std::string model;                    // checkpoint directory (or config dir for dummy)
  std::string tokenizer;                // default: the model directory
  std::string load_format = "auto";     // auto | safetensors | dummy
  std::string dtype = "auto";           // auto | bfloat16 | float16 | float32
  // Linear-layer quantization (vLLM's --quantization): "none" | "int8" (W8A8 from a
  // float checkpoint: LinearOptions{LinearQuantization::kInt8}) | a checkpoint method
  // ("awq", "awq_marlin", "gptq", "gptq_marlin", "compressed-tensors"), which must match
  // config.json's quantization_config (none takes the checkpoint's; model/quantization_flag.h).
  // GGUF Q8_0 weights run as Q8_0 regardless. The backend gets
  // LinearQuantizationFromName(FloatLinearQuantization(quantization)).
  std::string quantization = "none";
  std::string generation_config = "auto";  // auto (model's file) | vllm (none) | a directory
  uint64_t seed = 0;                    // engine seed: dummy weights, unseeded requests

  // Cache.
  int32_t block_size = 16;              // tokens per KV block
  std::string kv_cache_dtype = "auto";  // auto (bf16) | bfloat16 | float16 | float32
  int64_t kv_cache_memory_bytes = 0;    // exact KV pool size; 0 => from the fraction below
  double gpu_memory_utilization = 0.9;  // fraction of device (CPU: process-available) memory
  bool enable_prefix_caching = true;
  // Hybrid models (Qwen3.5 / Qwen3-Next) with prefix caching: snapshot the GDN state
  // every this many blocks (prefill chunks are cut there; vLLM's
  // --mamba-cache-block-interval idea) and keep this many snapshots (0 => sized from
  // memory: 25% of what the state slots leave), evicted LRU and planned with the KV
  // cache. Interval 0 turns prefix caching off for hybrid models.
  int32_t hybrid_state_snapshot_interval = 4;
  int32_t hybrid_state_snapshots = 0;

  // Speculative decoding: vLLM's --speculative-config JSON ("" = off); parsed and
  // checked by spec/speculative_config.h when the engine is created.
  std::string speculative_config;

  // Scheduler.
  std::optional<int32_t> max_model_len;  // default: the model's max_position_embeddings
  int32_t max_num_seqs = 256;
  // vLLM's --scheduling-policy: "fcfs", or "priority" (requests' `priority` field orders
  // admission and preemption; see SchedulerConfig::priority_policy).
  std::string scheduling_policy = "fcfs";
  int32_t max_num_batched_tokens = 2048;
  bool enable_chunked_prefill = true;
  // Per-request prefill chunk cap (vLLM's long_prefill_token_threshold); 0 => auto
  // (a quarter of max_num_batched_tokens when chunked prefill is on), so one long
  // prompt leaves room for running decodes in every step.
  int32_t long_prefill_token_threshold = 0;
  // Bound on the decode stall of prefill: in a step that carries decodes, prefill
  // takes at most this many tokens (all requests; at least one KV block). 0 => the
  // adaptive cap below.
  int32_t max_prefill_tokens_per_step = 0;
  // Adaptive cap: the engine learns step time vs tokens from measured steps and lets
  // prefill take what fits this step latency next to the running decodes (never less
  // than one block; no cap when nothing decodes). 0 => auto: prefill may add
  // max(1, prefilling / decoding requests) times the decodes' own step time (ITL at
  // most doubles while prompts arrive); < 0 => off (vLLM's behaviour: the budget only).
  double max_step_latency_ms = 0.0;
  int32_t max_logprobs = 20;
  // Bounded waiting queue (vLLM's --max-num-queued-reqs / --max-num-queued-tokens):
  // beyond either, a request gets 429 with Retry-After (admission_control.h). 0: none.
  int64_t max_num_queued_reqs = 0;
  int64_t max_num_queued_tokens = 0;

  // Parallelism (vLLM's --tensor-parallel-size / --pipeline-parallel-size /
  // --distributed-executor-backend). Tensor parallel ranks each hold a shard of every
  // layer of their stage; pipeline stages each hold a contiguous range of layers
  // (model/shard_plan.h). World = tensor x pipeline ranks; "mp" starts the other ranks
  // as child processes of this one, on this host.
  int32_t tensor_parallel_size = 1;
  int32_t pipeline_parallel_size = 1;
  int32_t world_size() const { return tensor_parallel_size * pipeline_parallel_size; }
  std::string distributed_executor_backend = "mp";
};

}  // namespace pagellm
