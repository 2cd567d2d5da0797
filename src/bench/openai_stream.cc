#include "bench/openai_stream.h"

#include <fmt/format.h>

namespace pagellm::bench {

std::string BuildRequestBody(ApiKind kind, const RequestSpec& spec) {
  Json body = Json::object();
  body["model"] = spec.model;
  if (kind == ApiKind::kCompletions) {
    body["prompt"] = spec.prompt;
    body["max_tokens"] = spec.max_tokens;
  } else {
    // A plain string content is accepted by every OpenAI-compatible server; vLLM's
    // client wraps the same text in a one-element [{type: text}] list.
    body["messages"] = spec.messages.is_array() ? spec.messages
                                                : Json::array({Json{{"role", "user"}, {"content", spec.prompt}}});
    body["max_completion_tokens"] = spec.max_tokens;
  }
  body["temperature"] = 0.0;
  body["stream"] = true;
  body["stream_options"] = Json{{"include_usage", true}};
  if (spec.ignore_eos) body["ignore_eos"] = true;
  if (spec.extra_body.is_object())
    for (const auto& [key, value] : spec.extra_body.items()) body[key] = value;
  return body.dump();
}

bool StreamAccumulator::IsContentChunk(const Json& choice, std::string* text) const {
  if (!choice.is_object()) return false;
  if (kind_ == ApiKind::kCompletions) {
    const auto it = choice.find("text");
    if (it == choice.end() || !it->is_string()) return false;
    *text = it->get<std::string>();
    return !text->empty();
  }
  const auto delta = choice.find("delta");
  if (delta == choice.end() || !delta->is_object()) return false;
  bool content = false;
  for (const char* key : {"content", "reasoning_content", "reasoning"}) {
    const auto it = delta->find(key);
    if (it != delta->end() && it->is_string() && !it->get_ref<const std::string&>().empty()) {
      if (std::string_view(key) == "content") *text = it->get<std::string>();
      content = true;
    }
  }
  const auto tools = delta->find("tool_calls");
  if (tools != delta->end() && tools->is_array() && !tools->empty()) content = true;
  return content;
}

void StreamAccumulator::OnEvent(std::string_view data, double elapsed_s) {
  if (data == "[DONE]") {
    done_ = true;
    return;
  }
  last_event_s_ = elapsed_s;
  Json chunk = Json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (chunk.is_discarded() || !chunk.is_object()) {
    if (error_.empty()) error_ = fmt::format("malformed stream event: {:.200}", data);
    return;
  }
  if (const auto err = chunk.find("error"); err != chunk.end()) {
    if (error_.empty()) error_ = fmt::format("error event: {:.300}", err->dump());
    return;
  }
  if (const auto usage = chunk.find("usage"); usage != chunk.end() && usage->is_object()) {
    const auto tokens = usage->find("completion_tokens");
    if (tokens != usage->end() && tokens->is_number_integer()) usage_completion_tokens_ = tokens->get<int64_t>();
    const auto prompt = usage->find("prompt_tokens");
    if (prompt != usage->end() && prompt->is_number_integer()) usage_prompt_tokens_ = prompt->get<int64_t>();
    const auto details = usage->find("prompt_tokens_details");
    if (details != usage->end() && details->is_object()) {
      const auto cached = details->find("cached_tokens");
      if (cached != details->end() && cached->is_number_integer()) usage_cached_tokens_ = cached->get<int64_t>();
    }
  }
  const auto choices = chunk.find("choices");
  if (choices == chunk.end() || !choices->is_array() || choices->empty()) return;
  std::string text;
  if (!IsContentChunk((*choices)[0], &text)) return;
  if (num_content_chunks_ == 0) {
    ttft_s_ = elapsed_s;
  } else {
    itl_s_.push_back(elapsed_s - last_content_s_);
  }
  last_content_s_ = elapsed_s;
  ++num_content_chunks_;
  text_ += text;
}

void StreamAccumulator::Finish(const std::string& transport_error, RequestOutput* out) const {
  out->generated_text = text_;
  out->output_tokens = usage_completion_tokens_;
  out->server_prompt_tokens = usage_prompt_tokens_;
  out->server_cached_tokens = usage_cached_tokens_;
  out->ttft_s = ttft_s_;
  out->itl_s = itl_s_;
  out->latency_s = last_event_s_;
  out->error.clear();
  if (!transport_error.empty()) {
    out->error = transport_error;
  } else if (!error_.empty()) {
    out->error = error_;
  } else if (num_content_chunks_ == 0) {
    out->error = "the stream carried no content chunk, so TTFT cannot be measured";
  }
  out->success = out->error.empty();
}

}  // namespace pagellm::bench
