#include "cli/engine_flags.h"

namespace pagellm::cli {

void AddEngineFlags(CLI::App* cmd, EngineConfig* c) {
  cmd->add_option("--tokenizer", c->tokenizer, "directory with tokenizer.json (default: the model's)");
  cmd->add_option("--load-format", c->load_format, "auto, safetensors or dummy (random weights from config.json)")
      ->capture_default_str();
  cmd->add_option("--dtype", c->dtype, "auto, bfloat16, float16 or float32")->capture_default_str();
  cmd->add_option("--quantization,-q", c->quantization,
                  "none (the checkpoint's own: awq, gptq, compressed-tensors int4), int8 (W8A8 of a float "
                  "checkpoint: per-channel int8 weights, per-token int8 activations), or the checkpoint's method "
                  "(awq, awq_marlin, gptq, gptq_marlin, compressed-tensors)")
      ->capture_default_str();
  cmd->add_option("--generation-config", c->generation_config,
                  "auto (the model's generation_config.json) or vllm (ignore it)")
      ->capture_default_str();
  cmd->add_option("--block-size", c->block_size, "tokens per KV-cache block")->capture_default_str();
  cmd->add_option("--kv-cache-dtype", c->kv_cache_dtype, "auto (bfloat16), bfloat16, float16 or float32")
      ->capture_default_str();
  cmd->add_option("--kv-cache-memory", c->kv_cache_memory_bytes,
                  "KV-cache size in bytes (overrides --gpu-memory-utilization)");
  cmd->add_option("--gpu-memory-utilization", c->gpu_memory_utilization,
                  "fraction of device memory (CPU: process memory) for weights, workspace and KV cache")
      ->capture_default_str();
  cmd->add_flag("--enable-prefix-caching,!--no-enable-prefix-caching", c->enable_prefix_caching,
                "reuse KV blocks of shared prompt prefixes (default on)");
  cmd->add_flag("--enable-chunked-prefill,!--no-enable-chunked-prefill", c->enable_chunked_prefill,
                "split long prompts across steps (default on)");
  cmd->add_option("--max-model-len", c->max_model_len, "longest prompt + output (default: the model's)");
  cmd->add_option("--max-num-seqs", c->max_num_seqs, "requests running at once")->capture_default_str();
  cmd->add_option("--max-num-batched-tokens", c->max_num_batched_tokens, "tokens computed per step")
      ->capture_default_str();
  cmd->add_option("--scheduling-policy", c->scheduling_policy,
                  "fcfs, or priority: requests' `priority` field (lower first) orders admission and preemption")
      ->check(CLI::IsMember({"fcfs", "priority"}))
      ->capture_default_str();
  cmd->add_option("--max-num-queued-reqs", c->max_num_queued_reqs,
                  "requests waiting to run beyond which new ones get 429 + Retry-After (0: unbounded)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--max-num-queued-tokens", c->max_num_queued_tokens,
                  "prompt tokens waiting to run beyond which new requests get 429 + Retry-After (0: unbounded)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--long-prefill-token-threshold", c->long_prefill_token_threshold,
                  "cap on one request's prefill chunk (0: a quarter of --max-num-batched-tokens)");
  cmd->add_option("--max-prefill-tokens-per-step", c->max_prefill_tokens_per_step,
                  "prefill tokens per step while requests are decoding, to bound their inter-token "
                  "latency (0: adaptive, see --max-step-latency-ms)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--max-step-latency-ms", c->max_step_latency_ms,
                  "adaptive prefill cap: target duration of a step that carries decodes, from measured "
                  "step times (0: auto, prefill at most doubles the decode step; -1: off, prefill fills "
                  "--max-num-batched-tokens)")
      ->capture_default_str();
  cmd->add_option("--hybrid-state-snapshot-interval", c->hybrid_state_snapshot_interval,
                  "hybrid models: snapshot the GDN state every N KV blocks for prefix caching (0: off)")
      ->capture_default_str();
  cmd->add_option("--hybrid-state-snapshots", c->hybrid_state_snapshots,
                  "hybrid models: GDN state snapshots kept for prefix caching (0: sized from memory, 25% of "
                  "what the state slots leave)")
      ->capture_default_str();
  cmd->add_option("--speculative-config", c->speculative_config,
                  "speculative decoding as vLLM's JSON, e.g. '{\"method\": \"ngram\", \"num_speculative_tokens\": 4, "
                  "\"prompt_lookup_max\": 4, \"prompt_lookup_min\": 2}' (n-gram prompt lookup) or '{\"model\": \"DRAFT_DIR\", "
                  "\"num_speculative_tokens\": 4}' (a draft model); greedy output is unchanged");
  cmd->add_option("--tensor-parallel-size", c->tensor_parallel_size,
                  "ranks that each hold a shard of every layer of their pipeline stage (mp: at most 8 "
                  "ranks in all, on this host)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--pipeline-parallel-size", c->pipeline_parallel_size,
                  "pipeline stages, each running a contiguous range of the layers")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--distributed-executor-backend", c->distributed_executor_backend,
                  "mp: pagellm starts its own worker processes on this host; mpi: the ranks of an "
                  "`mpirun -np N pagellm ...` job, on one host or several")
      ->check(CLI::IsMember({"mp", "mpi"}))
      ->capture_default_str();
  cmd->add_option("--max-logprobs", c->max_logprobs, "largest logprobs a request may ask for")->capture_default_str();
}

}  // namespace pagellm::cli
