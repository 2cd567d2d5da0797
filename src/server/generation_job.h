// GenerationJob: one /v1/chat/completions or /v1/completions request in flight. It owns
// the engine requests it started (one per prompt; n samples each), turns their deltas
// into OpenAI JSON (one response, or SSE chunks), and aborts them when the client goes.
//
//   auto job = std::make_shared<GenerationJob>(spec, exchange, engine, metrics, on_done);
//   job->Begin();                                         // registers the cancel handler
//   if (engine.AddRequest(id, ids, params, job->CallbackFor(0)).ok()) job->Started(id);
//   job->Seal(1);                                         // number of prompts added
//
// Threading: CallbackFor's callback runs on the engine thread and only posts the delta
// to the connection's strand (HttpExchange::Post); all other work runs on that strand.
// Ownership: the job is shared by the engine callbacks and the exchange's cancel
// handler (genuinely shared: whichever finishes last frees it).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "engine/llm_engine.h"
#include "net/api_error.h"
#include "net/http_server.h"
#include "server/openai_request.h"
#include "server/response_format.h"
#include "server/response_parser.h"
#include "server/server_metrics.h"

namespace pagellm::server {

// HTTP and OpenAI's error shape live in net/ (shared with bench/ and router/).
using net::ApiError;
using net::ApiErrorBody;
using net::ApiErrorFromStatus;
using net::HttpExchange;
using net::HttpRequest;
using net::MakeApiError;

struct JobSpec {
  bool chat = true;            // chat.completion vs text_completion shapes
  std::string id;              // "chatcmpl-..." / "cmpl-..."
  std::string model;
  int64_t created = 0;         // unix seconds
  int32_t n = 1;
  StreamOptions stream;
  bool logprobs = false;       // chat: logprobs=true; completions: logprobs given
  std::vector<std::string> echo_texts;  // completions with echo: per prompt
  ParserOptions parser;        // chat only: reasoning / tool-call parsing
  std::vector<std::vector<int32_t>> prompt_token_ids;  // per prompt, for return_token_ids
};

class GenerationJob : public std::enable_shared_from_this<GenerationJob> {
 public:
  GenerationJob(JobSpec spec, std::shared_ptr<HttpExchange> exchange, LlmEngine& engine, ServerMetrics& metrics,
                std::function<void()> on_done);
  // Sends the stream headers (streaming) and installs the disconnect handler.
  void Begin();
  // The engine callback for prompt `prompt_idx`.
  OutputCallback CallbackFor(int32_t prompt_idx);
  // The engine accepted prompt `prompt_idx` as `engine_request_id` (aborted on cancel).
  void Started(const std::string& engine_request_id) { engine_ids_.push_back(engine_request_id); }
  // All prompts were added; `num_prompts` of them. Until then the job cannot complete.
  void Seal(int32_t num_prompts);
  // Adding a prompt failed: abort those Started so far and answer with `error`.
  void Fail(const Status& error);

 private:
  struct Choice {
    std::string text;
    TextOffsets offsets;      // completion logprobs
    OrderedJson logprobs;     // chat: content array; completion: the 4 arrays
    std::string finish_reason;
    std::optional<std::variant<int32_t, std::string>> stop_reason;
    int32_t num_output_tokens = 0;
    double prev_token_s = 0.0;
    bool finished = false;
    bool sent_first = false;
    std::unique_ptr<ResponseParser> parser;
    ParsedMessage parsed;     // non-streaming chat result
    bool saw_tool_calls = false;
  };
  struct PromptUsage {
    int32_t prompt_tokens = 0;
    int32_t cached_tokens = 0;
  };

  void OnDelta(int32_t prompt_idx, RequestOutput&& d);  // strand
  void OnCancel();                                      // strand
  void StreamDelta(int32_t choice_idx, const RequestOutput& d);
  void StreamChatDelta(int32_t choice_idx, const RequestOutput& d, bool first);
  void MaybeComplete();
  void CompleteNonStreaming();
  void CompleteStreaming();
  OrderedJson ChunkBase() const;
  OrderedJson Usage() const;
  OrderedJson ChatChoiceJson(int32_t idx);
  OrderedJson CompletionChoiceJson(int32_t idx) const;
  static OrderedJson StopReasonJson(const Choice& c);

  JobSpec spec_;
  std::shared_ptr<HttpExchange> exchange_;
  LlmEngine& engine_;
  ServerMetrics& metrics_;
  const tokenizer::Tokenizer& tok_;
  std::function<void()> on_done_;
  std::vector<std::string> engine_ids_;
  std::vector<Choice> choices_;        // [num_prompts * n]
  std::vector<PromptUsage> usage_;     // [num_prompts]
  int32_t num_prompts_ = -1;           // -1 until Seal
  int32_t num_finished_ = 0;
  bool cancelled_ = false;
  bool done_ = false;
  Status error_;
};

}  // namespace pagellm::server
