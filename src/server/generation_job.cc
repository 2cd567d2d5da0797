#include "server/generation_job.h"

#include <algorithm>

#include <fmt/format.h>

#include "net/api_error.h"
#include "server/response_format.h"

namespace pagellm::server {

GenerationJob::GenerationJob(JobSpec spec, std::shared_ptr<HttpExchange> exchange, LlmEngine& engine,
                             ServerMetrics& metrics, std::function<void()> on_done)
    : spec_(std::move(spec)), exchange_(std::move(exchange)), engine_(engine), metrics_(metrics),
      tok_(engine.core().tokenizer()), on_done_(std::move(on_done)) {}

void GenerationJob::Begin() {
  if (spec_.stream.stream) exchange_->BeginStream("text/event-stream");
  exchange_->SetCancelHandler([self = shared_from_this()] { self->OnCancel(); });
}

OutputCallback GenerationJob::CallbackFor(int32_t prompt_idx) {
  // Engine thread: hand the delta to the connection's strand and return at once.
  return [self = shared_from_this(), prompt_idx](RequestOutput&& d) {
    std::shared_ptr<HttpExchange> ex = self->exchange_;
    ex->Post([self, prompt_idx, d = std::move(d)]() mutable { self->OnDelta(prompt_idx, std::move(d)); });
  };
}

void GenerationJob::Seal(int32_t num_prompts) {
  num_prompts_ = num_prompts;
  choices_.resize(static_cast<size_t>(num_prompts) * static_cast<size_t>(spec_.n));
  usage_.resize(static_cast<size_t>(num_prompts));
  for (size_t i = 0; i < choices_.size(); ++i) {
    Choice& c = choices_[i];
    if (spec_.chat) {
      c.logprobs = OrderedJson::array();
      c.parser = ResponseParser::Create(spec_.parser);
    } else {
      c.logprobs = EmptyCompletionLogprobs();
      size_t prompt = i / static_cast<size_t>(spec_.n);
      if (prompt < spec_.echo_texts.size()) {
        c.text = spec_.echo_texts[prompt];
        c.offsets.text = c.offsets.next_token = Utf8Length(c.text);
      }
    }
  }
  MaybeComplete();
}

void GenerationJob::Fail(const Status& error) {
  error_ = error;
  ApiError e = ApiErrorFromStatus(error);
  // An overloaded engine says when its queue will have drained.
  std::string headers = error.code() == StatusCode::kResourceExhausted
                            ? fmt::format("Retry-After: {}\r\n", engine_.RetryAfterSeconds())
                            : "";
  exchange_->Respond(e.http_status, "application/json", ApiErrorBody(e), std::move(headers));
  cancelled_ = true;  // nothing more is written
  for (const std::string& id : engine_ids_) engine_.AbortRequest(id);
  Seal(static_cast<int32_t>(engine_ids_.size()));
}

void GenerationJob::OnCancel() {
  if (cancelled_ || num_finished_ == static_cast<int32_t>(choices_.size())) return;
  cancelled_ = true;
  // The engine frees the requests' KV blocks at its next step and sends final deltas.
  for (const std::string& id : engine_ids_) engine_.AbortRequest(id);
}

void GenerationJob::OnDelta(int32_t prompt_idx, RequestOutput&& d) {
  size_t idx = static_cast<size_t>(prompt_idx) * static_cast<size_t>(spec_.n) + static_cast<size_t>(d.index);
  if (idx >= choices_.size() || choices_[idx].finished) return;
  Choice& c = choices_[idx];
  metrics_.OnDelta(d, &c.prev_token_s);
  PromptUsage& u = usage_[static_cast<size_t>(prompt_idx)];
  u.prompt_tokens = std::max(u.prompt_tokens, d.num_prompt_tokens);
  u.cached_tokens = std::max(u.cached_tokens, d.num_cached_tokens);
  c.num_output_tokens = d.num_output_tokens;
  if (!d.error.ok() && error_.ok()) error_ = d.error;
  if (d.finished) {
    c.finished = true;
    c.finish_reason = d.finish_reason;
    c.stop_reason = d.stop_reason;
    ++num_finished_;
  }
  if (!cancelled_ && error_.ok()) {
    if (spec_.stream.stream) {
      StreamDelta(static_cast<int32_t>(idx), d);
    } else {
      c.text += d.text;
      if (spec_.logprobs && spec_.chat) {
        for (auto& e : ChatLogprobs(tok_, d.logprobs)) c.logprobs.push_back(std::move(e));
      } else if (spec_.logprobs) {
        AppendCompletionLogprobs(tok_, d.logprobs, d.text, &c.offsets, &c.logprobs);
      }
    }
  }
  MaybeComplete();
}

OrderedJson GenerationJob::ChunkBase() const {
  return {{"id", spec_.id}, {"object", spec_.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", spec_.created}, {"model", spec_.model}};
}

OrderedJson GenerationJob::StopReasonJson(const Choice& c) {
  if (!c.stop_reason) return nullptr;
  if (std::holds_alternative<int32_t>(*c.stop_reason)) return std::get<int32_t>(*c.stop_reason);
  return std::get<std::string>(*c.stop_reason);
}

OrderedJson GenerationJob::Usage() const {
  int64_t prompt = 0, cached = 0, completion = 0;
  for (const PromptUsage& u : usage_) {
    prompt += u.prompt_tokens;
    cached += u.cached_tokens;
  }
  for (const Choice& c : choices_) completion += c.num_output_tokens;
  return UsageJson(prompt, completion, cached);
}

void GenerationJob::StreamDelta(int32_t choice_idx, const RequestOutput& d) {
  Choice& c = choices_[static_cast<size_t>(choice_idx)];
  bool first = !c.sent_first;
  c.sent_first = true;
  if (spec_.chat) return StreamChatDelta(choice_idx, d, first);
  std::string text = d.text;
  OrderedJson lp = nullptr;
  if (first) {
    size_t prompt = static_cast<size_t>(choice_idx / spec_.n);
    if (prompt < spec_.echo_texts.size()) text = spec_.echo_texts[prompt] + text;
  }
  if (spec_.logprobs) {
    lp = EmptyCompletionLogprobs();
    AppendCompletionLogprobs(tok_, d.logprobs, d.text, &c.offsets, &lp);
  }
  bool ids = spec_.stream.return_token_ids;
  if (text.empty() && !d.finished && d.logprobs.empty() && !(ids && (first || !d.new_token_ids.empty()))) return;
  OrderedJson chunk = ChunkBase();
  OrderedJson choice = {{"index", choice_idx}, {"text", text}, {"logprobs", lp},
                        {"finish_reason", d.finished ? OrderedJson(c.finish_reason) : OrderedJson()},
                        {"stop_reason", StopReasonJson(c)}};
  if (ids) {
    size_t prompt = static_cast<size_t>(choice_idx / spec_.n);
    if (first && prompt < spec_.prompt_token_ids.size()) choice["prompt_token_ids"] = spec_.prompt_token_ids[prompt];
    choice["token_ids"] = d.new_token_ids;
  }
  chunk["choices"] = OrderedJson::array({std::move(choice)});
  if (spec_.stream.include_usage && spec_.stream.continuous_usage_stats) chunk["usage"] = Usage();
  exchange_->Write(SseEvent(chunk));
}

void GenerationJob::StreamChatDelta(int32_t choice_idx, const RequestOutput& d, bool first) {
  Choice& c = choices_[static_cast<size_t>(choice_idx)];
  auto emit = [&](OrderedJson delta, OrderedJson logprobs, OrderedJson finish) {
    OrderedJson chunk = ChunkBase();
    bool has_finish = !finish.is_null();
    OrderedJson choice = {{"index", choice_idx}, {"delta", std::move(delta)}, {"logprobs", std::move(logprobs)},
                          {"finish_reason", std::move(finish)}};
    if (has_finish) choice["stop_reason"] = StopReasonJson(c);
    if (spec_.stream.return_token_ids) {
      if (first && !spec_.prompt_token_ids.empty()) chunk["prompt_token_ids"] = spec_.prompt_token_ids[0];
      choice["token_ids"] = first ? OrderedJson::array() : OrderedJson(d.new_token_ids);
      first = false;
    }
    chunk["choices"] = OrderedJson::array({std::move(choice)});
    if (spec_.stream.include_usage && spec_.stream.continuous_usage_stats) chunk["usage"] = Usage();
    exchange_->Write(SseEvent(chunk));
  };
  if (first) emit({{"role", "assistant"}, {"content", ""}}, nullptr, nullptr);
  ParsedDelta pd;
  if (c.parser) {
    pd = c.parser->Feed(d.text);
    if (d.finished) {
      ParsedDelta tail = c.parser->Finish();
      pd.content += tail.content;
      pd.reasoning += tail.reasoning;
      for (auto& t : tail.tool_calls) pd.tool_calls.push_back(std::move(t));
    }
    if (!pd.tool_calls.empty()) c.saw_tool_calls = true;
  } else {
    pd.content = d.text;
  }
  OrderedJson delta = OrderedJson::object();
  if (!pd.reasoning.empty()) delta["reasoning_content"] = pd.reasoning;
  if (!pd.content.empty()) delta["content"] = pd.content;
  if (!pd.tool_calls.empty()) delta["tool_calls"] = pd.tool_calls;
  OrderedJson lp = nullptr;
  if (spec_.logprobs && !d.logprobs.empty()) lp = {{"content", ChatLogprobs(tok_, d.logprobs)}};
  OrderedJson finish = nullptr;
  if (d.finished) finish = c.saw_tool_calls && c.finish_reason == "stop" ? "tool_calls" : c.finish_reason;
  bool ids = spec_.stream.return_token_ids && !d.new_token_ids.empty();
  if (delta.empty() && lp.is_null() && finish.is_null() && !ids) return;
  emit(std::move(delta), std::move(lp), std::move(finish));
}

void GenerationJob::MaybeComplete() {
  if (done_ || num_prompts_ < 0 || num_finished_ < static_cast<int32_t>(choices_.size())) return;
  done_ = true;
  if (!cancelled_) {
    if (spec_.stream.stream) {
      CompleteStreaming();
    } else if (!error_.ok()) {
      ApiError e = ApiErrorFromStatus(error_);
      exchange_->Respond(e.http_status, "application/json", ApiErrorBody(e));
    } else {
      CompleteNonStreaming();
    }
  }
  if (on_done_) on_done_();
}

OrderedJson GenerationJob::ChatChoiceJson(int32_t idx) {
  Choice& c = choices_[static_cast<size_t>(idx)];
  OrderedJson message = {{"role", "assistant"}};
  std::string finish = c.finish_reason;
  if (c.parser) {
    ParsedMessage m = c.parser->Parse(c.text);
    if (m.has_reasoning) message["reasoning_content"] = m.reasoning;
    message["content"] = m.has_content ? OrderedJson(m.content) : OrderedJson();
    message["tool_calls"] = m.tool_calls;
    if (!m.tool_calls.empty() && finish == "stop") finish = "tool_calls";
  } else {
    message["content"] = c.text;
    message["tool_calls"] = OrderedJson::array();
  }
  OrderedJson lp = spec_.logprobs ? OrderedJson{{"content", c.logprobs}} : OrderedJson();
  return {{"index", idx}, {"message", std::move(message)}, {"logprobs", std::move(lp)}, {"finish_reason", finish},
          {"stop_reason", StopReasonJson(c)}};
}

OrderedJson GenerationJob::CompletionChoiceJson(int32_t idx) const {
  const Choice& c = choices_[static_cast<size_t>(idx)];
  return {{"index", idx}, {"text", c.text}, {"logprobs", spec_.logprobs ? c.logprobs : OrderedJson()},
          {"finish_reason", c.finish_reason}, {"stop_reason", StopReasonJson(c)}, {"prompt_logprobs", nullptr}};
}

void GenerationJob::CompleteNonStreaming() {
  OrderedJson body = {{"id", spec_.id}, {"object", spec_.chat ? "chat.completion" : "text_completion"},
                      {"created", spec_.created}, {"model", spec_.model}};
  OrderedJson choices = OrderedJson::array();
  for (int32_t i = 0; i < static_cast<int32_t>(choices_.size()); ++i) {
    choices.push_back(spec_.chat ? ChatChoiceJson(i) : CompletionChoiceJson(i));
  }
  body["choices"] = std::move(choices);
  body["usage"] = Usage();
  exchange_->Respond(200, "application/json", DumpJson(body));
}

void GenerationJob::CompleteStreaming() {
  if (!error_.ok()) {
    ApiError e = ApiErrorFromStatus(error_);
    exchange_->Write("data: " + ApiErrorBody(e) + "\n\n");
  } else if (spec_.stream.include_usage) {
    OrderedJson chunk = ChunkBase();
    chunk["choices"] = OrderedJson::array();
    chunk["usage"] = Usage();
    exchange_->Write(SseEvent(chunk));
  }
  exchange_->Write(kSseDone);
  exchange_->EndStream();
}

}  // namespace pagellm::server
