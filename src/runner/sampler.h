// Sampler: turns one step's logits rows into one token per sequence.
//
// Per row it applies, in vLLM v1's order:
//   grammar mask (structured outputs) -> min_tokens mask (EOS + stop_token_ids -> -inf while output < min_tokens)
//   -> logit_bias -> repetition penalty -> presence/frequency penalties
//   -> greedy argmax (SamplingParams::is_greedy())          or
//   -> temperature -> min_p -> top_k -> top_p -> draw from the renormalised softmax.
// Rows at or beyond `num_valid_tokens` (padding of the lm_head) are never chosen.
// Logprobs, when requested, come from the RAW logits (see runner/logprobs.h).
//
// Randomness comes from the request's own RngState (one draw per sampled token,
// greedy included), so a seeded request yields the same tokens whatever else is in
// the batch. Rows run in parallel with OpenMP; each row is computed by one thread,
// so results do not depend on the thread count.
//
//   Sampler sampler(SamplerConfig{.num_valid_tokens = 151669, .eos_token_ids = {151645}});
//   std::vector<SamplingRequest> reqs = {{&params, prompt_ids, output_ids, &rng}};
//   std::vector<SampleResult> out = sampler.Sample(logits, vocab, reqs);  // logits [1, vocab]
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "runner/rng.h"
#include "sched/sampling_params.h"

namespace pagellm {

struct SamplerConfig {
  // Tokens [num_valid_tokens, vocab) are padding and never sampled; 0 => all valid.
  int32_t num_valid_tokens = 0;
  // EOS ids from generation_config.json; masked (with stop_token_ids) before min_tokens.
  std::vector<int32_t> eos_token_ids;
};

// One row's inputs. All members are borrowed and must outlive the Sample() call.
struct SamplingRequest {
  const SamplingParams* params = nullptr;
  std::span<const int32_t> prompt_ids;  // [num_prompt_tokens]
  std::span<const int32_t> output_ids;  // [num_output_tokens] generated so far
  RngState* rng = nullptr;              // advanced once per call; required unless greedy
  // Structured outputs: allowed-token bitset (bit i of word i / 32), applied before
  // every other processor; empty = unconstrained. If min_tokens or a bias leaves no
  // allowed token with a finite logit, the lowest allowed id is taken.
  std::span<const uint32_t> allowed_mask;
};

struct SampleResult {
  int32_t token = -1;
  // Raw logprob of `token`; 0 unless params->logprobs is set.
  float logprob = 0.0f;
  // params->logprobs best (token, raw logprob), descending; empty unless requested.
  std::vector<std::pair<int32_t, float>> top_logprobs;
};

class Sampler {
 public:
  explicit Sampler(SamplerConfig config);
  ~Sampler();

  // logits: [requests.size(), vocab] row-major fp32, row r belongs to requests[r].
  // Not thread-safe (uses per-thread scratch owned by the Sampler).
  std::vector<SampleResult> Sample(const float* logits, int32_t vocab,
                                   std::span<const SamplingRequest> requests);
  // The same with rows[r] the row of requests[r], wherever it is: a verification samples
  // one row of each request per round without gathering them (16 rows of Qwen's
  // vocabulary are 9.7 MB to copy, per round).
  std::vector<SampleResult> Sample(std::span<const float* const> rows, int32_t vocab,
                                   std::span<const SamplingRequest> requests);

 private:
  struct RowScratch;
  SampleResult SampleRow(const float* raw, int32_t vocab, const SamplingRequest& request,
                         RowScratch& scratch) const;
  // min_tokens mask -> logit_bias -> repetition -> presence/frequency, in place.
  void ApplyLogitsProcessors(const SamplingRequest& request, bool min_tokens_active,
                             std::span<float> row, RowScratch& scratch) const;
  RowScratch& ScratchFor(int thread_idx, int32_t vocab);

  SamplerConfig config_;
  std::vector<std::unique_ptr<RowScratch>> scratch_;  // one per OpenMP thread
};

}  // namespace pagellm
