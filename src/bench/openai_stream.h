// The OpenAI side of one benchmark request: the streaming request body for
// /v1/completions or /v1/chat/completions, and StreamAccumulator, which turns the
// response's SSE events (with their arrival times) into a RequestOutput.
//
//   std::string body = BuildRequestBody(ApiKind::kCompletions, spec);
//   StreamAccumulator acc(ApiKind::kCompletions);
//   for each SSE event: acc.OnEvent(data, seconds_since_send);
//   RequestOutput out;  acc.Finish(/*http_error=*/"", &out);
//
// A *content chunk* is a chunk whose first choice carries text (completions `text`;
// chat `delta.content`, `delta.reasoning_content`/`reasoning` or `delta.tool_calls`).
// TTFT is the first content chunk, ITL the gaps between content chunks, so role-only
// and finish-only chunks do not count as tokens. E2EL is the last data event before
// [DONE] (the usage chunk when the server sends one), as vLLM's chat client measures it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "bench/serving_metrics.h"
#include "common/json.h"

namespace pagellm::bench {

enum class ApiKind { kCompletions, kChatCompletions };

struct RequestSpec {
  std::string model;          // the API's "model" field
  std::string prompt;
  int64_t prompt_len = 0;
  int64_t max_tokens = 0;
  bool ignore_eos = false;
  Json extra_body = Json::object();  // merged last: sampling params, --extra-body
  // Chat only: the whole conversation ([{role, content}, ...]) to send instead of one
  // user message holding `prompt` (multi-turn benchmark); null = use `prompt`.
  Json messages = nullptr;
};

// Streaming body with stream_options.include_usage, temperature 0 unless extra_body sets
// it (vLLM's default is greedy), max_tokens (completions) or max_completion_tokens (chat).
std::string BuildRequestBody(ApiKind kind, const RequestSpec& spec);

class StreamAccumulator {
 public:
  explicit StreamAccumulator(ApiKind kind) : kind_(kind) {}

  // `data` is one SSE event's data; `elapsed_s` is when it arrived, from the send.
  void OnEvent(std::string_view data, double elapsed_s);
  // Fills the timing, text, token and success fields of *out. `transport_error` is the
  // HTTP/connection failure, if any (the stream then counts as failed).
  void Finish(const std::string& transport_error, RequestOutput* out) const;

  int64_t num_content_chunks() const { return num_content_chunks_; }

 private:
  bool IsContentChunk(const Json& choice, std::string* text) const;

  ApiKind kind_;
  int64_t num_content_chunks_ = 0;
  double ttft_s_ = 0.0;
  double last_content_s_ = 0.0;
  double last_event_s_ = 0.0;
  std::vector<double> itl_s_;
  std::string text_;
  int64_t usage_completion_tokens_ = 0;
  int64_t usage_prompt_tokens_ = -1;
  int64_t usage_cached_tokens_ = -1;
  bool done_ = false;
  std::string error_;
};

}  // namespace pagellm::bench
