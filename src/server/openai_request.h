// OpenAI request bodies -> typed requests: /v1/chat/completions and /v1/completions,
// with vLLM's extra sampling fields (top_k, min_p, repetition_penalty, stop_token_ids,
// ignore_eos, chat_template_kwargs, ...).
//
//   PAGELLM_ASSIGN_OR_RETURN(Json body, ParseJson(text, "request body"));
//   PAGELLM_ASSIGN_OR_RETURN(ChatRequest req, ParseChatRequest(body));
//
// Errors are InvalidArgument "<param>: <what>" so the server can fill the error's
// "param". Ranges are checked later by the engine (ValidateSamplingParams); this layer
// checks presence and JSON types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chat/content_format.h"
#include "common/json.h"
#include "common/status.h"
#include "sched/sampling_params.h"
#include "server/tool_choice.h"

namespace pagellm::server {

struct StreamOptions {
  bool stream = false;
  bool include_usage = false;           // a final chunk with usage and no choices
  bool continuous_usage_stats = false;  // usage in every chunk (vLLM extension)
  // vLLM's return_token_ids (streaming): each choice carries its new `token_ids`, the
  // first chunk the `prompt_token_ids` (what lets a router resume a stream elsewhere).
  bool return_token_ids = false;
};

struct ChatRequest {
  std::string model;                  // "" => the served model
  OrderedJson messages;               // normalized (see chat_messages.h)
  OrderedJson tools;                  // array, or null
  ToolChoice tool_choice;             // auto | none | required | named
  OrderedJson chat_template_kwargs = OrderedJson::object();
  bool add_generation_prompt = true;
  bool continue_final_message = false;
  bool logprobs = false;
  int32_t top_logprobs = 0;
  StreamOptions stream;
  SamplingParams params;
};

// One prompt of /v1/completions: text, or token ids when `is_ids`.
struct CompletionPrompt {
  bool is_ids = false;
  std::string text;
  std::vector<int32_t> ids;
};

struct CompletionRequest {
  std::string model;
  std::vector<CompletionPrompt> prompts;  // string | [string] | [int] | [[int]]
  bool echo = false;
  std::optional<int32_t> logprobs;
  std::string suffix;
  StreamOptions stream;
  SamplingParams params;
};

StatusOr<ChatRequest> ParseChatRequest(const OrderedJson& body,
                                       chat::ContentFormat content_format = chat::ContentFormat::kString);
StatusOr<CompletionRequest> ParseCompletionRequest(const OrderedJson& body);

// Sampling fields shared by both endpoints (max_tokens, temperature, stop, ...).
Status ParseSamplingFields(const OrderedJson& body, SamplingParams* params);

}  // namespace pagellm::server
