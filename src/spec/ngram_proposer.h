// NgramProposer: prompt lookup decoding (vLLM's "ngram" method, llama.cpp's lookup).
// The draft for a sequence is what followed the last earlier occurrence of its final n
// tokens, for the longest n in [min_n, max_n] that occurs: text that repeats its context
// (code edits, quotes, extraction, summaries) is guessed for free. A continuation that
// reaches the end of the text repeats with its period (a run of " ab" drafts k tokens).
//
//   NgramProposer p({.min_n = 2, .max_n = 4, .num_speculative_tokens = 3});
//   std::vector<int32_t> drafts = p.Propose(all_token_ids);   // 0..3 tokens
//
// The most recent occurrence wins (vLLM takes the first; the recent one is the better
// guess when a text is being rewritten piece by piece). Cost: O(len * max_n) per call,
// a few microseconds for a few thousand tokens.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace pagellm {

struct NgramProposerConfig {
  int32_t min_n = 5;
  int32_t max_n = 5;
  int32_t num_speculative_tokens = 1;
};

class NgramProposer {
 public:
  explicit NgramProposer(NgramProposerConfig config) : config_(config) {}
  // Up to `max_tokens` (<= num_speculative_tokens; negative: that bound) draft tokens
  // continuing `tokens`; empty when no n-gram of the allowed sizes repeats.
  std::vector<int32_t> Propose(std::span<const int32_t> tokens, int32_t max_tokens = -1) const;

 private:
  NgramProposerConfig config_;
};

}  // namespace pagellm
