#include "server/openai_request.h"
#include "server/structured_outputs_request.h"

#include <charconv>

#include <fmt/format.h>

#include "server/chat_messages.h"

namespace pagellm::server {
namespace {

bool Present(const OrderedJson& j, const char* key) { return j.contains(key) && !j[key].is_null(); }

Status TypeError(const char* key, const char* want) {
  return InvalidArgumentError(fmt::format("{}: must be {}", key, want));
}

Status ReadFloat(const OrderedJson& j, const char* key, std::optional<float>* out) {
  if (!Present(j, key)) return OkStatus();
  if (!j[key].is_number()) return TypeError(key, "a number");
  *out = j[key].get<float>();
  return OkStatus();
}

Status ReadFloat(const OrderedJson& j, const char* key, float* out) {
  std::optional<float> v;
  PAGELLM_RETURN_IF_ERROR(ReadFloat(j, key, &v));
  if (v) *out = *v;
  return OkStatus();
}

Status ReadInt(const OrderedJson& j, const char* key, std::optional<int64_t>* out) {
  if (!Present(j, key)) return OkStatus();
  const OrderedJson& v = j[key];
  if (v.is_number_integer()) {
    *out = v.get<int64_t>();
  } else if (v.is_number_float() && v.get<double>() == static_cast<double>(static_cast<int64_t>(v.get<double>()))) {
    *out = static_cast<int64_t>(v.get<double>());
  } else {
    return TypeError(key, "an integer");
  }
  return OkStatus();
}

Status ReadInt32(const OrderedJson& j, const char* key, std::optional<int32_t>* out) {
  std::optional<int64_t> v;
  PAGELLM_RETURN_IF_ERROR(ReadInt(j, key, &v));
  if (!v) return OkStatus();
  if (*v < INT32_MIN || *v > INT32_MAX) return InvalidArgumentError(fmt::format("{}: out of range", key));
  *out = static_cast<int32_t>(*v);
  return OkStatus();
}

Status ReadBool(const OrderedJson& j, const char* key, bool* out) {
  if (!Present(j, key)) return OkStatus();
  if (!j[key].is_boolean()) return TypeError(key, "a boolean");
  *out = j[key].get<bool>();
  return OkStatus();
}

Status ReadString(const OrderedJson& j, const char* key, std::string* out) {
  if (!Present(j, key)) return OkStatus();
  if (!j[key].is_string()) return TypeError(key, "a string");
  *out = j[key].get<std::string>();
  return OkStatus();
}

Status ReadIntList(const OrderedJson& v, const char* key, std::vector<int32_t>* out) {
  if (!v.is_array()) return TypeError(key, "an array of integers");
  for (const auto& x : v) {
    if (!x.is_number_integer()) return TypeError(key, "an array of integers");
    int64_t id = x.get<int64_t>();
    if (id < INT32_MIN || id > INT32_MAX) return InvalidArgumentError(fmt::format("{}: id {} out of range", key, id));
    out->push_back(static_cast<int32_t>(id));
  }
  return OkStatus();
}

Status ParseStop(const OrderedJson& body, SamplingParams* p) {
  if (!Present(body, "stop")) return OkStatus();
  const OrderedJson& stop = body["stop"];
  if (stop.is_string()) {
    p->stop = {stop.get<std::string>()};
    return OkStatus();
  }
  if (!stop.is_array()) return TypeError("stop", "a string or an array of strings");
  for (const auto& s : stop) {
    if (!s.is_string()) return TypeError("stop", "a string or an array of strings");
    p->stop.push_back(s.get<std::string>());
  }
  return OkStatus();
}

Status ParseLogitBias(const OrderedJson& body, SamplingParams* p) {
  if (!Present(body, "logit_bias")) return OkStatus();
  const OrderedJson& bias = body["logit_bias"];
  if (!bias.is_object()) return TypeError("logit_bias", "an object of token id -> bias");
  for (const auto& [key, value] : bias.items()) {
    int32_t id = 0;
    auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    if (ec != std::errc() || end != key.data() + key.size()) {
      return InvalidArgumentError(fmt::format("logit_bias: key '{}' is not a token id", key));
    }
    if (!value.is_number()) return TypeError("logit_bias", "an object of token id -> number");
    p->logit_bias.emplace_back(id, value.get<float>());
  }
  return OkStatus();
}

Status ParseStreamOptions(const OrderedJson& body, StreamOptions* s) {
  PAGELLM_RETURN_IF_ERROR(ReadBool(body, "stream", &s->stream));
  PAGELLM_RETURN_IF_ERROR(ReadBool(body, "return_token_ids", &s->return_token_ids));
  if (!Present(body, "stream_options")) return OkStatus();
  const OrderedJson& o = body["stream_options"];
  if (!o.is_object()) return TypeError("stream_options", "an object");
  if (!s->stream) return InvalidArgumentError("stream_options: only allowed when stream is true");
  PAGELLM_RETURN_IF_ERROR(ReadBool(o, "include_usage", &s->include_usage));
  PAGELLM_RETURN_IF_ERROR(ReadBool(o, "continuous_usage_stats", &s->continuous_usage_stats));
  return OkStatus();
}

}  // namespace

Status ParseSamplingFields(const OrderedJson& body, SamplingParams* p) {
  std::optional<int32_t> n, max_tokens, max_completion_tokens, min_tokens, top_k;
  PAGELLM_RETURN_IF_ERROR(ReadInt32(body, "n", &n));
  if (n) p->n = *n;
  std::optional<int32_t> priority;
  PAGELLM_RETURN_IF_ERROR(ReadInt32(body, "priority", &priority));
  if (priority) p->priority = *priority;
  PAGELLM_RETURN_IF_ERROR(ReadInt32(body, "max_tokens", &max_tokens));
  PAGELLM_RETURN_IF_ERROR(ReadInt32(body, "max_completion_tokens", &max_completion_tokens));
  // OpenAI deprecated max_tokens in favour of max_completion_tokens; the newer wins.
  p->max_tokens = max_completion_tokens ? max_completion_tokens : max_tokens;
  if (p->max_tokens && *p->max_tokens < 1) {
    return InvalidArgumentError(fmt::format("{}: must be at least 1, got {}",
                                            max_completion_tokens ? "max_completion_tokens" : "max_tokens", *p->max_tokens));
  }
  PAGELLM_RETURN_IF_ERROR(ReadInt32(body, "min_tokens", &min_tokens));
  if (min_tokens) p->min_tokens = *min_tokens;
  PAGELLM_RETURN_IF_ERROR(ReadFloat(body, "temperature", &p->temperature));
  PAGELLM_RETURN_IF_ERROR(ReadFloat(body, "top_p", &p->top_p));
  PAGELLM_RETURN_IF_ERROR(ReadInt32(body, "top_k", &top_k));
  p->top_k = top_k;
  PAGELLM_RETURN_IF_ERROR(ReadFloat(body, "min_p", &p->min_p));
  PAGELLM_RETURN_IF_ERROR(ReadFloat(body, "presence_penalty", &p->presence_penalty));
  PAGELLM_RETURN_IF_ERROR(ReadFloat(body, "frequency_penalty", &p->frequency_penalty));
  PAGELLM_RETURN_IF_ERROR(ReadFloat(body, "repetition_penalty", &p->repetition_penalty));
  std::optional<int64_t> seed;
  PAGELLM_RETURN_IF_ERROR(ReadInt(body, "seed", &seed));
  if (seed) p->seed = static_cast<uint64_t>(*seed);
  PAGELLM_RETURN_IF_ERROR(ParseStop(body, p));
  if (Present(body, "stop_token_ids")) {
    PAGELLM_RETURN_IF_ERROR(ReadIntList(body["stop_token_ids"], "stop_token_ids", &p->stop_token_ids));
  }
  PAGELLM_RETURN_IF_ERROR(ReadBool(body, "ignore_eos", &p->ignore_eos));
  PAGELLM_RETURN_IF_ERROR(ReadBool(body, "skip_special_tokens", &p->skip_special_tokens));
  PAGELLM_RETURN_IF_ERROR(ReadBool(body, "include_stop_str_in_output", &p->include_stop_str_in_output));
  PAGELLM_RETURN_IF_ERROR(ParseLogitBias(body, p));
  PAGELLM_RETURN_IF_ERROR(ParseStructuredOutputs(body, p));
  if (Present(body, "best_of")) return InvalidArgumentError("best_of: not supported (removed in vLLM V1)");
  return OkStatus();
}

StatusOr<ChatRequest> ParseChatRequest(const OrderedJson& body, chat::ContentFormat content_format) {
  if (!body.is_object()) return InvalidArgumentError("body: must be a JSON object");
  ChatRequest r;
  PAGELLM_RETURN_IF_ERROR(ReadString(body, "model", &r.model));
  if (!Present(body, "messages")) return InvalidArgumentError("messages: field required");
  PAGELLM_ASSIGN_OR_RETURN(r.messages, NormalizeMessages(body["messages"], content_format));
  if (Present(body, "tools")) {
    PAGELLM_ASSIGN_OR_RETURN(r.tools, ValidateTools(body["tools"]));
  }
  if (Present(body, "tool_choice")) {
    PAGELLM_ASSIGN_OR_RETURN(r.tool_choice, ParseToolChoice(body["tool_choice"]));
  }
  if (Present(body, "chat_template_kwargs")) {
    if (!body["chat_template_kwargs"].is_object()) return TypeError("chat_template_kwargs", "an object");
    r.chat_template_kwargs = body["chat_template_kwargs"];
  }
  PAGELLM_RETURN_IF_ERROR(ReadBool(body, "add_generation_prompt", &r.add_generation_prompt));
  PAGELLM_RETURN_IF_ERROR(ReadBool(body, "continue_final_message", &r.continue_final_message));
  PAGELLM_RETURN_IF_ERROR(ReadBool(body, "logprobs", &r.logprobs));
  std::optional<int32_t> top_logprobs;
  PAGELLM_RETURN_IF_ERROR(ReadInt32(body, "top_logprobs", &top_logprobs));
  if (top_logprobs && !r.logprobs) return InvalidArgumentError("top_logprobs: requires logprobs to be true");
  if (top_logprobs && *top_logprobs < 0) return InvalidArgumentError("top_logprobs: must be >= 0");
  r.top_logprobs = top_logprobs.value_or(0);
  PAGELLM_RETURN_IF_ERROR(ParseStreamOptions(body, &r.stream));
  PAGELLM_RETURN_IF_ERROR(ParseSamplingFields(body, &r.params));
  if (r.logprobs) r.params.logprobs = r.top_logprobs;
  return r;
}

namespace {

StatusOr<std::vector<CompletionPrompt>> ParsePrompts(const OrderedJson& prompt) {
  std::vector<CompletionPrompt> out;
  if (prompt.is_string()) {
    out.push_back({false, prompt.get<std::string>(), {}});
    return out;
  }
  if (!prompt.is_array() || prompt.empty()) {
    return InvalidArgumentError("prompt: must be a string, an array of strings, an array of token ids or an array of "
                                "token id arrays (non-empty)");
  }
  if (prompt[0].is_number_integer()) {
    CompletionPrompt p{true, "", {}};
    PAGELLM_RETURN_IF_ERROR(ReadIntList(prompt, "prompt", &p.ids));
    out.push_back(std::move(p));
    return out;
  }
  for (const auto& item : prompt) {
    if (item.is_string()) {
      out.push_back({false, item.get<std::string>(), {}});
    } else if (item.is_array()) {
      CompletionPrompt p{true, "", {}};
      PAGELLM_RETURN_IF_ERROR(ReadIntList(item, "prompt", &p.ids));
      out.push_back(std::move(p));
    } else {
      return InvalidArgumentError("prompt: array items must be strings or token id arrays");
    }
  }
  return out;
}

}  // namespace

StatusOr<CompletionRequest> ParseCompletionRequest(const OrderedJson& body) {
  if (!body.is_object()) return InvalidArgumentError("body: must be a JSON object");
  CompletionRequest r;
  PAGELLM_RETURN_IF_ERROR(ReadString(body, "model", &r.model));
  if (!Present(body, "prompt")) return InvalidArgumentError("prompt: field required");
  PAGELLM_ASSIGN_OR_RETURN(r.prompts, ParsePrompts(body["prompt"]));
  PAGELLM_RETURN_IF_ERROR(ReadBool(body, "echo", &r.echo));
  PAGELLM_RETURN_IF_ERROR(ReadInt32(body, "logprobs", &r.logprobs));
  if (r.logprobs && *r.logprobs < 0) return InvalidArgumentError("logprobs: must be >= 0");
  PAGELLM_RETURN_IF_ERROR(ReadString(body, "suffix", &r.suffix));
  if (!r.suffix.empty()) return InvalidArgumentError("suffix: not supported");
  PAGELLM_RETURN_IF_ERROR(ParseStreamOptions(body, &r.stream));
  PAGELLM_RETURN_IF_ERROR(ParseSamplingFields(body, &r.params));
  r.params.logprobs = r.logprobs;
  return r;
}

}  // namespace pagellm::server
