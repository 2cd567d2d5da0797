// SpeculativeConfig: vLLM's --speculative-config JSON, parsed and checked.
//
//   auto cfg = ParseSpeculativeConfig(R"({"method": "ngram", "num_speculative_tokens": 4,
//                                         "prompt_lookup_max": 4, "prompt_lookup_min": 2})");
//
// Methods: "ngram" (prompt lookup), "draft_model" (a smaller model sharing the
// tokenizer: {"model": DIR, "num_speculative_tokens": k}, method optional as in vLLM) and
// "mtp" (the checkpoint's multi-token-prediction head, Qwen3.5 / Qwen3-Next; vLLM's
// older names qwen3_next_mtp / qwen3_5_mtp mean the same; k defaults to 1 as vLLM's).
// N-gram defaults follow vLLM: prompt_lookup_min/max both 5 when both are omitted; if
// one is given the other mirrors it. disable_by_batch_size (vLLM's key): drafts while at
// most this many requests run, none above; 0 (default) leaves the decision to the
// engine's measured step cost (spec_policy.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace pagellm {

struct SpeculativeConfig {
  std::string method;                 // "" = off, "ngram", "draft_model", "mtp"
  std::string model;                  // draft_model: the draft checkpoint (directory or GGUF)
  int32_t num_speculative_tokens = 0;  // k, drafts per step and request
  int32_t prompt_lookup_min = 5;
  int32_t prompt_lookup_max = 5;
  int32_t disable_by_batch_size = 0;  // 0: automatic (spec_policy.h)
  bool enabled() const { return !method.empty() && num_speculative_tokens > 0; }
  std::string Describe() const;       // one line for the start-up log
};

// Largest k accepted (vLLM's MAX_SPEC_LEN is 32 to 128; beyond ~16 a CPU step is no
// longer memory bound, so more drafts only cost).
inline constexpr int32_t kMaxSpeculativeTokens = 32;

// InvalidArgument naming the key for malformed JSON, unknown keys, bad values, and
// methods that are not built yet. An empty string means off.
StatusOr<SpeculativeConfig> ParseSpeculativeConfig(std::string_view json);

}  // namespace pagellm
