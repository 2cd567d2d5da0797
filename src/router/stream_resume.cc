#include "router/stream_resume.h"

#include <algorithm>

#include "router/completion_logprobs.h"

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

// A chunk's choice that shows the client text (completions text, chat content,
// reasoning or a tool call).
bool CarriesText(const OrderedJson& choice) {
  auto non_empty = [](const OrderedJson& j, const char* key) {
    return j.contains(key) && ((j[key].is_string() && !j[key].get<std::string>().empty()) || j[key].is_array());
  };
  if (non_empty(choice, "text")) return true;
  if (!choice.contains("delta") || !choice["delta"].is_object()) return false;
  const OrderedJson& d = choice["delta"];
  return non_empty(d, "content") || non_empty(d, "reasoning_content") || non_empty(d, "reasoning") ||
         non_empty(d, "tool_calls");
}

bool BoolField(const OrderedJson& body, const char* key) {
  return body.contains(key) && body[key].is_boolean() && body[key].get<bool>();
}

}  // namespace

StreamResume::StreamResume(const OrderedJson& client_body, bool chat, const RequestKey& key)
    : client_body_(client_body), chat_(chat), key_(key), choices_(static_cast<size_t>(std::max<int64_t>(key.n, 1))) {
  client_wants_ids_ = BoolField(client_body, "return_token_ids");
  wants_usage_ = client_body.contains("stream_options") && client_body["stream_options"].is_object() &&
                 BoolField(client_body["stream_options"], "include_usage");
  if (chat && client_body.contains("top_logprobs") && client_body["top_logprobs"].is_number_integer()) {
    top_k_ = client_body["top_logprobs"].get<int64_t>();
  }
  // A chat request without a limit would get the completions default (16) on resume.
  if (chat && !key.max_tokens_given) key_.resumable = false;
}

OrderedJson StreamResume::UpstreamBody() const {
  OrderedJson body = client_body_;
  if (key_.resumable) body["return_token_ids"] = true;
  return body;
}

bool StreamResume::AllFinished() const {
  return std::all_of(choices_.begin(), choices_.end(), [](const Choice& c) { return c.finished; });
}

int64_t StreamResume::num_generated() const {
  int64_t n = 0;
  for (const Choice& c : choices_) n += static_cast<int64_t>(c.generated.size());
  return n;
}

bool StreamResume::CanResume() const { return key_.resumable && prompt_ids_.has_value() && !AllFinished(); }

bool StreamResume::BeginResume(std::vector<OrderedJson>* events) {
  if (!CanResume()) return false;
  for (size_t i = 0; i < choices_.size(); ++i) {
    Choice& c = choices_[i];
    if (c.finished) continue;
    // Held-back tokens are produced again: the resume starts at the last settled one.
    c.repeat = static_cast<int64_t>(c.generated.size() - c.settled);
    c.generated.resize(c.settled);
    c.next_text_offset = c.settled_offset;
    if (Remaining(c) > 0) {
      current_ = static_cast<int>(i);
      c.offset_base = c.next_text_offset;
      return true;
    }
    // Cut between the choice's last token and its finish chunk.
    c.finished = true;
    OrderedJson event = ChunkHeader();
    OrderedJson choice = {{"index", i}};
    if (chat_) {
      choice["delta"] = OrderedJson::object();
      choice["logprobs"] = nullptr;
    } else {
      choice["text"] = "";
      choice["logprobs"] = nullptr;
    }
    choice["finish_reason"] = "length";
    event["choices"] = OrderedJson::array({std::move(choice)});
    events->push_back(std::move(event));
  }
  return false;
}

OrderedJson StreamResume::ResumeBody() const {
  const Choice& c = choices_[static_cast<size_t>(std::max(current_, 0))];
  OrderedJson body = client_body_;
  for (const char* f : kChatOnlyFields) body.erase(f);
  if (chat_) {  // chat's logprobs: true + top_logprobs k; completions' logprobs: k
    body.erase("logprobs");
    if (BoolField(client_body_, "logprobs")) body["logprobs"] = top_k_;
  }
  std::vector<int64_t> prompt = *prompt_ids_;
  prompt.insert(prompt.end(), c.generated.begin(), c.generated.end());
  body["prompt"] = prompt;
  body["n"] = 1;
  body["max_tokens"] = Remaining(c);
  if (body.contains("min_tokens") && body["min_tokens"].is_number_integer()) {  // the tokens so far count
    body["min_tokens"] = std::max<int64_t>(0, body["min_tokens"].get<int64_t>() - static_cast<int64_t>(c.generated.size()));
  }
  body["stream"] = true;
  body["return_token_ids"] = true;
  return body;
}

void StreamResume::Record(OrderedJson& choice) {
  if (!prompt_ids_ && choice.contains("prompt_token_ids") && choice["prompt_token_ids"].is_array()) {
    prompt_ids_.emplace();
    AppendIds(choice["prompt_token_ids"], &*prompt_ids_);
  }
  if (choice.contains("index") && choice["index"].is_number_integer()) {
    size_t i = choice["index"].get<size_t>();
    if (i < choices_.size()) {
      Choice& c = choices_[i];
      if (choice.contains("token_ids")) AppendIds(choice["token_ids"], &c.generated);
      if (choice.contains("finish_reason") && !choice["finish_reason"].is_null()) c.finished = true;
      if (!chat_ && choice.contains("text") && choice["text"].is_string()) {
        c.next_text_offset += TextOffsetAdvance(choice["text"].get<std::string>());
      }
      if (CarriesText(choice) || c.finished) {
        c.settled = c.generated.size();
        c.settled_offset = c.next_text_offset;
      }
    }
  }
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
    first_model_ = event.contains("model") ? event["model"] : OrderedJson();
  }
  if (event.contains("prompt_token_ids")) {  // chat puts it on the chunk, not the choice
    OrderedJson holder = {{"prompt_token_ids", event["prompt_token_ids"]}};
    Record(holder);
    if (!client_wants_ids_) event.erase("prompt_token_ids");
  }
  if (!resumed()) {
    if (event.contains("choices") && event["choices"].is_array()) {
      for (auto& choice : event["choices"]) {
        if (choice.is_object()) Record(choice);
      }
    }
    return event;
  }
  bool usage_only = event.contains("usage") && (!event.contains("choices") || event["choices"].empty());
  if (usage_only) {  // a resume's own usage: the router sends the whole request's at the end
    const OrderedJson& u = event["usage"];
    if (u.is_object() && u.contains("prompt_tokens_details") && u["prompt_tokens_details"].is_object()) {
      cached_tokens_ = u["prompt_tokens_details"].value("cached_tokens", int64_t{0});
    }
    return std::nullopt;
  }
  return RewriteResumed(std::move(event));
}

OrderedJson StreamResume::ChunkHeader() const {
  OrderedJson e = {{"id", first_id_}, {"object", chat_ ? "chat.completion.chunk" : "text_completion"}};
  if (!first_created_.is_null()) e["created"] = first_created_;
  if (!first_model_.is_null()) e["model"] = first_model_;
  return e;
}

OrderedJson StreamResume::ChatChoice(const OrderedJson& choice) const {
  OrderedJson delta = OrderedJson::object();
  if (choice.contains("text") && choice["text"].is_string() && !choice["text"].get<std::string>().empty()) {
    delta["content"] = choice["text"];
  }
  OrderedJson logprobs;
  if (choice.contains("logprobs") && choice["logprobs"].is_object()) {
    logprobs = ChatLogprobsFromCompletion(choice["logprobs"], top_k_);
  }
  OrderedJson out = {{"index", choice["index"]}, {"delta", std::move(delta)}, {"logprobs", std::move(logprobs)},
                     {"finish_reason", choice.contains("finish_reason") ? choice["finish_reason"] : OrderedJson()}};
  if (choice.contains("stop_reason") && !out["finish_reason"].is_null()) out["stop_reason"] = choice["stop_reason"];
  if (client_wants_ids_ && choice.contains("token_ids")) out["token_ids"] = choice["token_ids"];
  return out;
}

OrderedJson StreamResume::RewriteResumed(OrderedJson event) {
  event["id"] = first_id_;
  if (!first_created_.is_null()) event["created"] = first_created_;
  if (event.contains("choices") && event["choices"].is_array()) {
    Choice& c = choices_[static_cast<size_t>(current_)];
    for (auto& choice : event["choices"]) {
      if (!choice.is_object()) continue;
      choice["index"] = current_;
      if (!chat_ && choice.contains("logprobs")) ShiftTextOffsets(&choice["logprobs"], c.offset_base);
      const int64_t repeated = std::min<int64_t>(
          c.repeat, choice.contains("token_ids") && choice["token_ids"].is_array() ? choice["token_ids"].size() : 0);
      Record(choice);
      if (repeated > 0) {  // the client saw these tokens' ids and logprobs already
        c.repeat -= repeated;
        if (choice.contains("logprobs")) DropLeadingTokens(&choice["logprobs"], repeated);
        if (choice.contains("token_ids") && choice["token_ids"].is_array()) {
          OrderedJson& ids = choice["token_ids"];
          ids.erase(ids.begin(), ids.begin() + repeated);
        }
      }
      if (chat_) choice = ChatChoice(choice);
    }
  }
  if (event.contains("usage") && event["usage"].is_object()) {  // continuous usage stats: the totals so far
    event["usage"]["prompt_tokens"] = static_cast<int64_t>(prompt_ids_->size());
    event["usage"]["completion_tokens"] = num_generated();
    event["usage"]["total_tokens"] = static_cast<int64_t>(prompt_ids_->size()) + num_generated();
  }
  if (chat_) event["object"] = "chat.completion.chunk";
  return event;
}

std::vector<OrderedJson> StreamResume::FinalEvents() const {
  std::vector<OrderedJson> out;
  if (!resumed() || !wants_usage_ || !prompt_ids_) return out;
  int64_t prompt = static_cast<int64_t>(prompt_ids_->size());
  OrderedJson usage = {{"prompt_tokens", prompt}, {"total_tokens", prompt + num_generated()},
                       {"completion_tokens", num_generated()}};
  // What the last resume found cached covers the first attempt's output too; the
  // client's prompt can have been cached at most whole.
  if (cached_tokens_ >= 0) usage["prompt_tokens_details"] = {{"cached_tokens", std::min(cached_tokens_, prompt)}};
  OrderedJson event = ChunkHeader();
  event["choices"] = OrderedJson::array();
  event["usage"] = std::move(usage);
  out.push_back(std::move(event));
  return out;
}

}  // namespace pagellm::router
