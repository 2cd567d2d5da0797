// What the router reads from an OpenAI request body: the text its prefix index keys on,
// a token estimate for its own load accounting, and whether a cut stream can be resumed.
//
//   RequestKey k = ReadRequestKey(body, /*chat=*/true);
//   // k.text: "system\x1fYou are...\x1euser\x1fHi\x1e" (every message, in order)
#pragma once

#include <cstdint>
#include <string>

#include "common/json.h"

namespace pagellm::router {

struct RequestKey {
  std::string text;         // prompt, or every message's role and text content joined
  int64_t est_tokens = 0;   // ~4 characters per prompt token, plus max tokens
  int64_t max_tokens = 16;  // the request's limit (vLLM's completions default 16)
  bool max_tokens_given = false;
  bool stream = false;
  int64_t n = 1;            // choices per prompt
  // A stream that can be continued elsewhere from its token ids: one prompt, no echo,
  // no best_of, no output constraint (the router then asks the worker for
  // return_token_ids); any n, logprobs.
  bool resumable = false;
};

RequestKey ReadRequestKey(const OrderedJson& body, bool chat);

}  // namespace pagellm::router
