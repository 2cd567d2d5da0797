// The generating and tokenizing endpoints of OpenAiServer (openai_server.cc holds
// routing and the small endpoints).
#include <chrono>

#include <fmt/format.h>

#include "parsers/reasoning_parser.h"
#include "server/chat_constraints.h"
#include "server/chat_messages.h"
#include "server/generation_job.h"
#include "server/openai_server.h"
#include "server/response_format.h"

namespace pagellm::server {
namespace {

int64_t UnixSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

bool IsFalse(const OrderedJson& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_boolean() && !j[key].get<bool>();
}

// A boolean field, or `fallback` when absent; wrong types are an error naming it.
StatusOr<bool> BoolField(const OrderedJson& j, const char* key, bool fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  if (!j[key].is_boolean()) return InvalidArgumentError(fmt::format("{}: must be a boolean", key));
  return j[key].get<bool>();
}

}  // namespace

void OpenAiServer::HandleChat(const std::shared_ptr<HttpExchange>& ex, const OrderedJson& body) {
  auto fail = [&](const Status& s) { RespondError(ex, ApiErrorFromStatus(s)); };
  StatusOr<ChatRequest> parsed = ParseChatRequest(body, content_format_);
  if (!parsed.ok()) return fail(parsed.status());
  ChatRequest& req = *parsed;
  if (Status s = CheckModel(req.model); !s.ok()) return fail(s);
  bool has_tools = req.tools.is_array() && !req.tools.empty();
  if (has_tools && req.tool_choice.mode == "auto" && (!options_.enable_auto_tool_choice || options_.tool_call_parser.empty())) {
    return RespondError(ex, MakeApiError(400, "\"auto\" tool choice requires --enable-auto-tool-choice and "
                                              "--tool-call-parser to be set", "tool_choice"));
  }
  StatusOr<std::string> prompt = RenderChat(req.messages, has_tools ? req.tools : OrderedJson(),
                                            req.add_generation_prompt, req.continue_final_message,
                                            req.chat_template_kwargs);
  if (!prompt.ok()) return fail(prompt.status());
  std::vector<int32_t> ids = engine_.core().tokenizer().Encode(*prompt);
  if (Status s = CheckLength(ids.size(), req.params, "messages"); !s.ok()) return fail(s);

  JobSpec spec;
  spec.chat = true;
  spec.id = NextId("chatcmpl");
  spec.model = options_.served_model_name;
  spec.created = UnixSeconds();
  spec.n = req.params.n;
  spec.stream = req.stream;
  spec.logprobs = req.logprobs;
  if (req.stream.return_token_ids) spec.prompt_token_ids = {ids};
  spec.parser.reasoning_parser = options_.reasoning_parser;
  spec.parser.tools_enabled = has_tools && req.tool_choice.mode == "auto";
  if (spec.parser.tools_enabled) spec.parser.tool_parser = options_.tool_call_parser;
  spec.parser.tools = req.tools;
  // Qwen3 with enable_thinking=false gets "<think>\n\n</think>\n\n" in the prompt.
  spec.parser.starts_in_reasoning = !parsers::PromptEndsReasoning(*prompt) &&
                                    !IsFalse(req.chat_template_kwargs, "enable_thinking");
  if (Status s = ApplyChatConstraints(engine_.core().tokenizer(), options_.tool_call_parser, &req, &spec.parser);
      !s.ok()) {
    return fail(s);
  }
  ++num_inflight_;
  auto job = std::make_shared<GenerationJob>(std::move(spec), ex, engine_, metrics_, [this] { --num_inflight_; });
  std::string engine_id = fmt::format("{}-0", NextId("chatcmpl"));
  Status added = engine_.AddRequest(engine_id, std::move(ids), req.params, job->CallbackFor(0));
  if (!added.ok()) return job->Fail(added);
  job->Started(engine_id);
  job->Begin();
  job->Seal(1);
}

void OpenAiServer::HandleCompletion(const std::shared_ptr<HttpExchange>& ex, const OrderedJson& body) {
  auto fail = [&](const Status& s) { RespondError(ex, ApiErrorFromStatus(s)); };
  StatusOr<CompletionRequest> parsed = ParseCompletionRequest(body);
  if (!parsed.ok()) return fail(parsed.status());
  CompletionRequest& req = *parsed;
  if (Status s = CheckModel(req.model); !s.ok()) return fail(s);
  const tokenizer::Tokenizer& tok = engine_.core().tokenizer();
  std::vector<std::vector<int32_t>> prompt_ids;
  JobSpec spec;
  for (const CompletionPrompt& p : req.prompts) {
    prompt_ids.push_back(p.is_ids ? p.ids : tok.Encode(p.text));
    if (Status s = CheckLength(prompt_ids.back().size(), req.params, "prompt"); !s.ok()) return fail(s);
    if (req.echo) spec.echo_texts.push_back(p.is_ids ? tok.Decode(p.ids) : p.text);
  }
  spec.chat = false;
  spec.id = NextId("cmpl");
  spec.model = options_.served_model_name;
  spec.created = UnixSeconds();
  spec.n = req.params.n;
  spec.stream = req.stream;
  spec.logprobs = req.logprobs.has_value();
  if (req.stream.return_token_ids) spec.prompt_token_ids = prompt_ids;
  ++num_inflight_;
  auto job = std::make_shared<GenerationJob>(std::move(spec), ex, engine_, metrics_, [this] { --num_inflight_; });
  std::string base = NextId("cmpl");
  for (size_t i = 0; i < prompt_ids.size(); ++i) {
    std::string engine_id = fmt::format("{}-{}", base, i);
    Status added = engine_.AddRequest(engine_id, std::move(prompt_ids[i]), req.params,
                                      job->CallbackFor(static_cast<int32_t>(i)));
    if (!added.ok()) return job->Fail(added);
    job->Started(engine_id);
  }
  job->Begin();
  job->Seal(static_cast<int32_t>(prompt_ids.size()));
}

void OpenAiServer::HandleTokenize(const std::shared_ptr<HttpExchange>& ex, const OrderedJson& body) {
  auto fail = [&](const Status& s) { RespondError(ex, ApiErrorFromStatus(s)); };
  if (body.contains("model") && body["model"].is_string()) {
    if (Status s = CheckModel(body["model"].get<std::string>()); !s.ok()) return fail(s);
  }
  const tokenizer::Tokenizer& tok = engine_.core().tokenizer();
  std::vector<int32_t> ids;
  if (body.contains("messages")) {
    StatusOr<OrderedJson> messages = NormalizeMessages(body["messages"], content_format_);
    if (!messages.ok()) return fail(messages.status());
    OrderedJson tools;
    if (body.contains("tools") && !body["tools"].is_null()) {
      StatusOr<OrderedJson> t = ValidateTools(body["tools"]);
      if (!t.ok()) return fail(t.status());
      tools = *t;
    }
    OrderedJson kwargs = body.contains("chat_template_kwargs") ? body["chat_template_kwargs"] : OrderedJson::object();
    if (kwargs.is_null()) kwargs = OrderedJson::object();
    if (!kwargs.is_object()) return fail(InvalidArgumentError("chat_template_kwargs: must be an object"));
    StatusOr<bool> add_generation_prompt = BoolField(body, "add_generation_prompt", true);
    if (!add_generation_prompt.ok()) return fail(add_generation_prompt.status());
    StatusOr<bool> continue_final = BoolField(body, "continue_final_message", false);
    if (!continue_final.ok()) return fail(continue_final.status());
    StatusOr<std::string> text = RenderChat(*messages, tools, *add_generation_prompt, *continue_final, kwargs);
    if (!text.ok()) return fail(text.status());
    ids = tok.Encode(*text);
  } else if (body.contains("prompt") && body["prompt"].is_string()) {
    ids = tok.Encode(body["prompt"].get<std::string>());
  } else {
    return fail(InvalidArgumentError("prompt: a string \"prompt\" or a \"messages\" array is required"));
  }
  OrderedJson out = {{"count", ids.size()}, {"max_model_len", engine_.core().max_model_len()}, {"tokens", ids},
                     {"token_strs", nullptr}};
  if (body.contains("return_token_strs") && body["return_token_strs"].is_boolean() && body["return_token_strs"].get<bool>()) {
    OrderedJson strs = OrderedJson::array();
    for (int32_t id : ids) strs.push_back(tok.IdToToken(id));
    out["token_strs"] = std::move(strs);
  }
  RespondJson(ex, out);
}

void OpenAiServer::HandleDetokenize(const std::shared_ptr<HttpExchange>& ex, const OrderedJson& body) {
  if (body.contains("model") && body["model"].is_string()) {
    if (Status s = CheckModel(body["model"].get<std::string>()); !s.ok()) return RespondError(ex, ApiErrorFromStatus(s));
  }
  if (!body.contains("tokens") || !body["tokens"].is_array()) {
    return RespondError(ex, MakeApiError(400, "tokens: an array of token ids is required", "tokens"));
  }
  const tokenizer::Tokenizer& tok = engine_.core().tokenizer();
  std::vector<int32_t> ids;
  for (const auto& v : body["tokens"]) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= tok.vocab_size()) {
      return RespondError(ex, MakeApiError(400, fmt::format("tokens: {} is not a token id of this model", v.dump()),
                                           "tokens"));
    }
    ids.push_back(v.get<int32_t>());
  }
  RespondJson(ex, {{"prompt", tok.Decode(ids)}});
}

}  // namespace pagellm::server
