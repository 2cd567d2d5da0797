// GenerationConfig: the sampling defaults a checkpoint ships in generation_config.json.
//
//   PAGELLM_ASSIGN_OR_RETURN(GenerationConfig gen, LoadGenerationConfig(model_dir));
//   SamplingParams params = request_params;   // fields the user left unset stay nullopt
//   ApplyGenerationDefaults(gen, params);      // vLLM's `--generation-config auto`
//
// A missing file is not an error: every field is then unset and vLLM's own defaults
// (temperature 1, top_p 1, top_k off, ...) apply downstream.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/status.h"
#include "sched/sampling_params.h"

namespace pagellm {

struct GenerationConfig {
  std::optional<float> temperature;
  std::optional<float> top_p;
  std::optional<int32_t> top_k;
  std::optional<float> min_p;
  std::optional<float> repetition_penalty;
  std::optional<float> presence_penalty;  // parsed; vLLM does not take it from the file
  std::optional<int32_t> max_new_tokens;
  std::optional<bool> do_sample;          // false => greedy (HF generate semantics)
  std::vector<int32_t> eos_token_ids;     // stop ids; empty when the file has none
  std::optional<int32_t> bos_token_id;
  std::optional<int32_t> pad_token_id;
  bool loaded = false;                    // true when generation_config.json existed
};

// Parses a generation_config.json object; wrong types fail naming the key.
StatusOr<GenerationConfig> ParseGenerationConfig(const Json& json);

// Reads `dir`/generation_config.json if present; otherwise returns an empty config.
StatusOr<GenerationConfig> LoadGenerationConfig(const std::string& dir);

// Fills the fields of `params` the user left unset (nullopt) from `gen`, as vLLM's
// `--generation-config auto` does for temperature, top_p, top_k, min_p,
// repetition_penalty and max_new_tokens (-> max_tokens). If the file says
// do_sample=false and the user gave no temperature, the request becomes greedy
// (temperature 0), matching what HF `generate` does with that file.
void ApplyGenerationDefaults(const GenerationConfig& gen, SamplingParams& params);

}  // namespace pagellm
