#include "router/stream_resume.h"

#include <algorithm>

namespace pagellm::router {
namespace {

// Chat-only fields a /v1/completions resume must not carry.
constexpr const char* kChatOnlyFields[] = {
    "messages", "tools", "tool_choice", "parallel_tool_calls", "chat_template", "chat_template_kwargs",
    "add_generation_prompt", "continue_final_message", "max_completion_tokens", "reasoning_effort",
    "response_format", "top_logprobs", "documents"};

void AppendIds(const OrderedJson& ids, std::vector<int64_t>* out) {
  if (!ids.is_array()) return;
  for (const auto& v : ids) {
    if (v.is_number_integer()) out->push_back(v.get<int64_t>());
  }
}

}  // namespace

StreamResume::StreamResume(const OrderedJson& client_body, bool chat, const RequestKey& key)
    : client_body_(client_body), chat_(chat), key_(key) {
  client_wants_ids_ = client_body.contains("return_token_ids") && client_body["return_token_ids"].is_boolean() &&
                      client_body["return_token_ids"].get<bool>();
  // A chat request without a limit would get the completions default (16) on resume.
  if (chat && !key.max_tokens_given) key_.resumable = false;
}

OrderedJson StreamResume::UpstreamBody() const {
  OrderedJson body = client_body_;
  if (key_.resumable) body["return_token_ids"] = true;
  return body;
}

bool StreamResume::CanResume() const {
  return key_.resumable && prompt_ids_.has_value() && !finished_ && key_.max_tokens > num_generated();
}

OrderedJson StreamResume::ResumeBody() const {
  OrderedJson body = client_body_;
  for (const char* f : kChatOnlyFields) body.erase(f);
  std::vector<int64_t> prompt = *prompt_ids_;
  prompt.insert(prompt.end(), generated_.begin(), generated_.end());
  body["prompt"] = prompt;
  body["max_tokens"] = key_.max_tokens - num_generated();
  body["stream"] = true;
  body["return_token_ids"] = true;
  return body;
}

void StreamResume::BeginResume() {
  resumed_ = true;
  resume_offset_ = num_generated();
}

void StreamResume::Record(OrderedJson& choice) {
  if (!prompt_ids_ && choice.contains("prompt_token_ids") && choice["prompt_token_ids"].is_array()) {
    prompt_ids_.emplace();
    AppendIds(choice["prompt_token_ids"], &*prompt_ids_);
  }
  if (choice.contains("token_ids")) AppendIds(choice["token_ids"], &generated_);
  if (choice.contains("finish_reason") && !choice["finish_reason"].is_null()) finished_ = true;
  if (!client_wants_ids_) {
    choice.erase("token_ids");
    choice.erase("prompt_token_ids");
  }
}

std::optional<OrderedJson> StreamResume::OnEvent(OrderedJson event) {
  if (!event.is_object()) return event;
  if (first_id_.is_null() && event.contains("id")) {
    first_id_ = event["id"];
    first_created_ = event.contains("created") ? event["created"] : OrderedJson();
  }
  if (event.contains("prompt_token_ids")) {  // chat puts it on the chunk, not the choice
    OrderedJson holder = {{"prompt_token_ids", event["prompt_token_ids"]}};
    Record(holder);
    if (!client_wants_ids_) event.erase("prompt_token_ids");
  }
  if (event.contains("choices") && event["choices"].is_array()) {
    for (auto& choice : event["choices"]) {
      if (choice.is_object()) Record(choice);
    }
  }
  if (!resumed_) return event;
  return RewriteResumed(std::move(event));
}

OrderedJson StreamResume::RewriteResumed(OrderedJson event) const {
  event["id"] = first_id_;
  if (!first_created_.is_null()) event["created"] = first_created_;
  if (event.contains("usage") && event["usage"].is_object()) {
    OrderedJson& u = event["usage"];
    if (u.contains("prompt_tokens")) u["prompt_tokens"] = u["prompt_tokens"].get<int64_t>() - resume_offset_;
    if (u.contains("completion_tokens")) u["completion_tokens"] = u["completion_tokens"].get<int64_t>() + resume_offset_;
  }
  if (!chat_ || !event.contains("choices")) return event;
  event["object"] = "chat.completion.chunk";
  for (auto& choice : event["choices"]) {
    OrderedJson delta = OrderedJson::object();
    if (choice.contains("text") && choice["text"].is_string() && !choice["text"].get<std::string>().empty()) {
      delta["content"] = choice["text"];
    }
    OrderedJson out = {{"index", choice.value("index", 0)}, {"delta", std::move(delta)}, {"logprobs", nullptr},
                       {"finish_reason", choice.contains("finish_reason") ? choice["finish_reason"] : OrderedJson()}};
    if (choice.contains("stop_reason") && !out["finish_reason"].is_null()) out["stop_reason"] = choice["stop_reason"];
    if (client_wants_ids_ && choice.contains("token_ids")) out["token_ids"] = choice["token_ids"];
    choice = std::move(out);
  }
  return event;
}

}  // namespace pagellm::router
