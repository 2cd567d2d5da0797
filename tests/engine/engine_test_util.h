// Helpers for the engine end-to-end tests: a tiny dummy checkpoint on disk, engine
// configs with small memory budgets, and a driver that runs a set of requests through
// an EngineCore and collects each request's full output.
//
//   std::string dir = TinyCheckpoint(DType::kF32);          // written once per process
//   auto core = EngineCore::Create(TinyConfig(dir, DType::kF32)).value();
//   RunResult r = RunConcurrently(*core, {{"a", ids_a, params}, {"b", ids_b, params}});
//   EXPECT_EQ(r.outputs["a"].token_ids, ...);
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/engine_core.h"
#include "tensor/dtype.h"

namespace pagellm::testing {

// Writes (once per dtype) a qwen3-tiny dummy checkpoint with the real Qwen3 tokenizer
// under the test binary's temp directory and returns its path.
std::string TinyCheckpoint(DType dtype);
// The same for another dummy preset (e.g. "qwen3.5-tiny", "qwen3-next-tiny").
std::string TinyCheckpoint(const std::string& preset, DType dtype);

// Weights and KV cache in `dtype`; 64 MiB of KV, max_model_len 2048, greedy-friendly.
EngineConfig TinyConfig(const std::string& model_dir, DType dtype);

// `c` made to preempt: a KV budget of `num_blocks` blocks (priced as `probe` prices one)
// next to `max_num_seqs` state slots and a speculative checkpoint each (hybrid models;
// 0 bytes otherwise), no hybrid snapshots, and `max_model_len`.
EngineConfig WithTightKvBudget(EngineConfig c, const MemoryPlan& probe, int32_t num_blocks, int32_t max_num_seqs,
                               int32_t max_model_len);

// Random ids from the ordinary (non-added) vocabulary, deterministic in `seed`.
std::vector<int32_t> RandomPrompt(int32_t num_tokens, uint64_t seed);

// Greedy, EOS ignored, logprob of each sampled token requested.
SamplingParams GreedyParams(int32_t max_tokens);

struct PromptSpec {
  std::string id;
  std::vector<int32_t> prompt_token_ids;
  SamplingParams params;
};

struct SampleOutput {
  std::vector<int32_t> token_ids;
  std::vector<float> logprobs;  // of each sampled token, when requested
  std::string text;
  std::string finish_reason;
  int32_t num_cached_tokens = 0;
  int32_t num_deltas_after_finish = 0;  // must stay 0
};

struct RunResult {
  // "<id>" for n == 1, "<id>#<index>" for n > 1.
  std::map<std::string, SampleOutput> outputs;
  int64_t num_steps = 0;
  int64_t num_computed_tokens = 0;  // sum of every step's scheduled tokens
  int32_t max_running = 0;          // most requests running in one step
};

// Adds every request, then steps until idle. `before_step(step_idx)` runs before each
// Step (e.g. to abort a request mid-way).
RunResult RunConcurrently(EngineCore& core, const std::vector<PromptSpec>& specs,
                          const std::function<void(int64_t)>& before_step = {});
// Each request alone, one after the other (the reference for the batching tests).
RunResult RunOneByOne(EngineCore& core, const std::vector<PromptSpec>& specs);

// EngineCore::Create or abort the test binary, printing why.
std::unique_ptr<EngineCore> MakeEngineOrDie(const EngineConfig& c);

// Same tokens, finish reasons and text per sample, logprobs within `logprob_tol`, and no
// delta after a sample finished: what speculation (or batching) must leave unchanged.
void ExpectSameOutputs(const RunResult& got, const RunResult& want, const std::string& what, float logprob_tol);

// Largest |a - b| over two logprob lists of the same length.
float MaxLogprobDiff(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace pagellm::testing
