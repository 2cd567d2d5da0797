// SamplingParams: how one request turns logits into tokens and when it stops.
//
// Field names and defaults follow vLLM's SamplingParams (and so the OpenAI API);
// `generation_config.json` of the model supplies defaults for fields the user leaves
// unset (see model/generation_config.h), which is why several fields are optional.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sched/structured_outputs_params.h"

namespace pagellm {

struct SamplingParams {
  int32_t n = 1;                         // samples per prompt
  // vLLM's request priority (--scheduling-policy priority): lower runs first; ties in
  // arrival order. A request attribute beside the sampling ones, as vLLM passes it.
  int32_t priority = 0;
  std::optional<float> temperature;      // 0 => greedy; default 1.0 or generation_config
  std::optional<float> top_p;            // (0, 1]; default 1.0
  std::optional<int32_t> top_k;          // <= 0 or -1 => disabled
  std::optional<float> min_p;            // [0, 1]; default 0
  float presence_penalty = 0.0f;         // [-2, 2], OpenAI semantics (generated tokens)
  float frequency_penalty = 0.0f;        // [-2, 2], OpenAI semantics (generated tokens)
  std::optional<float> repetition_penalty;  // > 0, HF semantics (prompt + generated); default 1.0
  std::optional<uint64_t> seed;          // per-request RNG seed; unset => engine-chosen
  std::optional<int32_t> max_tokens;     // unset => until max_model_len
  int32_t min_tokens = 0;                // EOS/stop ignored before this many tokens
  std::vector<std::string> stop;         // stop strings; excluded from output text
  std::vector<int32_t> stop_token_ids;   // extra stop tokens (in addition to EOS)
  bool ignore_eos = false;
  bool include_stop_str_in_output = false;
  bool skip_special_tokens = true;
  std::vector<std::pair<int32_t, float>> logit_bias;  // token id -> added bias
  std::optional<int32_t> logprobs;       // number of top logprobs per generated token
  std::optional<int32_t> prompt_logprobs;
  std::optional<StructuredOutputsParams> structured_outputs;  // constrained decoding

  bool is_greedy() const { return temperature.has_value() && *temperature <= 1e-5f; }
};

}  // namespace pagellm
