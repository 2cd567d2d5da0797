// RequestOutput: one delta of one request's output stream, pushed by the engine to
// the request's callback after every step that produced something for it.
//
// Deltas concatenate: the client's text is the concatenation of every `text` field,
// its token ids the concatenation of `new_token_ids`. The last delta has
// finished = true and carries the finish reason and final counts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "common/status.h"

namespace pagellm {

struct TokenLogprob {
  int32_t token_id = 0;
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top_logprobs;  // best first
};

struct RequestTimes {
  double arrival_s = 0.0;          // AddRequest, engine clock (seconds, monotonic)
  double first_scheduled_s = 0.0;  // admitted into a step
  double first_token_s = 0.0;      // first output token sampled
  double last_token_s = 0.0;
  double finished_s = 0.0;
};

struct RequestOutput {
  std::string request_id;  // the id given to AddRequest
  int32_t index = 0;       // sample index for n > 1 (OpenAI `choices[i].index`)
  std::vector<int32_t> new_token_ids;
  // New text (stop strings excluded). Non-empty only when nothing of these tokens is
  // held back (an incomplete UTF-8 character, a possible start of a stop string), so a
  // delta with text is final for all its tokens; the text waits for the next delta.
  std::string text;
  std::vector<TokenLogprob> logprobs;  // one per new token when logprobs were requested
  bool finished = false;
  std::string finish_reason;  // "stop", "length", "abort"; set when finished
  std::optional<std::variant<int32_t, std::string>> stop_reason;
  Status error;               // non-OK: the request failed (then finished = true)
  int32_t num_prompt_tokens = 0;
  int32_t num_cached_tokens = 0;  // prompt tokens served from the prefix cache
  int32_t num_output_tokens = 0;  // so far
  RequestTimes times;
};

}  // namespace pagellm
