#include "cli/prompt_input.h"

#include <charconv>

#include <fmt/format.h>

#include "chat/load_chat_template.h"
#include "engine/engine_core.h"

namespace pagellm::cli {

StatusOr<std::vector<int32_t>> ParseIdList(const std::string& text) {
  std::vector<int32_t> ids;
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end) {
    while (p < end && (*p == ',' || *p == ' ' || *p == '[' || *p == ']' || *p == '\n')) ++p;
    if (p == end) break;
    int32_t value = 0;
    auto [next, ec] = std::from_chars(p, end, value);
    if (ec != std::errc()) return InvalidArgumentError(fmt::format("not a token id list: '{}'", text));
    ids.push_back(value);
    p = next;
  }
  return ids;
}

StatusOr<std::string> RenderChat(const EngineCore& core, const OrderedJson& messages,
                                 const OrderedJson& kwargs, const std::string& chat_template_path) {
  PAGELLM_ASSIGN_OR_RETURN(chat::ChatTemplate tmpl, chat::LoadChatTemplate(core.tokenizer_dir(), chat_template_path));
  return tmpl.Render(messages, nullptr, /*add_generation_prompt=*/true, kwargs.is_null() ? OrderedJson::object() : kwargs);
}

StatusOr<std::vector<int32_t>> PromptIdsFromJson(const EngineCore& core, const OrderedJson& line,
                                                 const std::string& chat_template_path) {
  if (line.contains("prompt_token_ids")) {
    if (!line["prompt_token_ids"].is_array()) return InvalidArgumentError("prompt_token_ids must be an array");
    std::vector<int32_t> ids;
    for (const auto& v : line["prompt_token_ids"]) {
      if (!v.is_number_integer()) return InvalidArgumentError("prompt_token_ids must hold integers");
      ids.push_back(v.get<int32_t>());
    }
    return ids;
  }
  if (line.contains("messages")) {
    OrderedJson kwargs = line.value("chat_template_kwargs", OrderedJson::object());
    PAGELLM_ASSIGN_OR_RETURN(std::string text, RenderChat(core, line["messages"], kwargs, chat_template_path));
    return core.tokenizer().Encode(text);
  }
  if (line.contains("prompt") && line["prompt"].is_string()) {
    return core.tokenizer().Encode(line["prompt"].get<std::string>());
  }
  return InvalidArgumentError("each line needs \"prompt\", \"messages\" or \"prompt_token_ids\"");
}

namespace {

template <typename T>
Status Read(const OrderedJson& j, const char* key, T* out) {
  if (!j.contains(key) || j[key].is_null()) return OkStatus();
  try {
    *out = j[key].get<T>();
  } catch (const std::exception&) {
    return InvalidArgumentError(fmt::format("{}: wrong type", key));
  }
  return OkStatus();
}

template <typename T>
Status ReadOpt(const OrderedJson& j, const char* key, std::optional<T>* out) {
  if (!j.contains(key) || j[key].is_null()) return OkStatus();
  T value{};
  PAGELLM_RETURN_IF_ERROR(Read(j, key, &value));
  *out = value;
  return OkStatus();
}

}  // namespace

StatusOr<SamplingParams> SamplingParamsFromJson(const OrderedJson& j) {
  SamplingParams p;
  PAGELLM_RETURN_IF_ERROR(Read(j, "n", &p.n));
  PAGELLM_RETURN_IF_ERROR(ReadOpt(j, "temperature", &p.temperature));
  PAGELLM_RETURN_IF_ERROR(ReadOpt(j, "top_p", &p.top_p));
  PAGELLM_RETURN_IF_ERROR(ReadOpt(j, "top_k", &p.top_k));
  PAGELLM_RETURN_IF_ERROR(ReadOpt(j, "min_p", &p.min_p));
  PAGELLM_RETURN_IF_ERROR(Read(j, "presence_penalty", &p.presence_penalty));
  PAGELLM_RETURN_IF_ERROR(Read(j, "frequency_penalty", &p.frequency_penalty));
  PAGELLM_RETURN_IF_ERROR(ReadOpt(j, "repetition_penalty", &p.repetition_penalty));
  PAGELLM_RETURN_IF_ERROR(ReadOpt(j, "seed", &p.seed));
  PAGELLM_RETURN_IF_ERROR(ReadOpt(j, "max_tokens", &p.max_tokens));
  PAGELLM_RETURN_IF_ERROR(Read(j, "min_tokens", &p.min_tokens));
  if (j.contains("stop") && j["stop"].is_string()) {
    p.stop = {j["stop"].get<std::string>()};
  } else {
    PAGELLM_RETURN_IF_ERROR(Read(j, "stop", &p.stop));
  }
  PAGELLM_RETURN_IF_ERROR(Read(j, "stop_token_ids", &p.stop_token_ids));
  PAGELLM_RETURN_IF_ERROR(Read(j, "ignore_eos", &p.ignore_eos));
  PAGELLM_RETURN_IF_ERROR(Read(j, "skip_special_tokens", &p.skip_special_tokens));
  PAGELLM_RETURN_IF_ERROR(Read(j, "include_stop_str_in_output", &p.include_stop_str_in_output));
  PAGELLM_RETURN_IF_ERROR(ReadOpt(j, "logprobs", &p.logprobs));
  return p;
}

}  // namespace pagellm::cli
