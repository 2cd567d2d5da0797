// SampleState: what the engine tracks for one sample of a request beyond what the
// scheduler keeps (RNG, incremental detokenizer, stop checker, callback, timings).
// Private to the engine.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "engine/request_output.h"
#include "engine/stop_checker.h"
#include "grammar/matcher.h"
#include "runner/rng.h"
#include "sched/sampling_params.h"
#include "tokenizer/incremental_detokenizer.h"

namespace pagellm {

using OutputCallback = std::function<void(RequestOutput&&)>;

struct SampleState {
  SampleState(const tokenizer::Tokenizer& tok, const SamplingParams& p, std::span<const int32_t> eos,
              int32_t max_model_len, int32_t num_prompt)
      : params(p), detok(tok, p.skip_special_tokens), stop(params, eos, max_model_len, num_prompt),
        num_prompt_tokens(num_prompt) {}
  std::string parent_id;
  int32_t index = 0;
  SamplingParams params;
  RngState rng = RngState::FromSeed(0);
  tokenizer::IncrementalDetokenizer detok;
  StopChecker stop;
  std::shared_ptr<OutputCallback> callback;  // shared by a request's samples
  int32_t num_prompt_tokens = 0;
  int32_t num_cached_tokens = 0;
  int32_t num_output_tokens = 0;
  bool finished = false;
  // Text the detokenizer and stop checker released while something of a later token
  // was still held back: it goes out with the first delta that ends with nothing held
  // (see EngineCore::EmitToken).
  std::string unreleased_text;
  RequestTimes times;
  // Structured outputs: null when unconstrained. The matcher applies once
  // `grammar_active` (after params.structured_outputs->start_after_token, if any).
  std::unique_ptr<grammar::Matcher> matcher;
  bool grammar_active = false;
  std::vector<uint32_t> mask;  // [vocab words] this step's allowed tokens
};

}  // namespace pagellm
