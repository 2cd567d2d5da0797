#include "server/openai_server.h"

#include <chrono>
#include <random>

#include <fmt/format.h>

#include "chat/load_chat_template.h"
#include "common/logging.h"
#include "server/preempt_request.h"
#include "server/response_format.h"

namespace pagellm::server {

OpenAiServer::OpenAiServer(LlmEngine& engine, OpenAiServerOptions options)
    : engine_(engine), options_(std::move(options)), metrics_(options_.served_model_name) {
  id_salt_ = std::random_device{}() * 0x9E3779B97F4A7C15ull;
  created_ = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

StatusOr<std::unique_ptr<OpenAiServer>> OpenAiServer::Create(LlmEngine& engine, OpenAiServerOptions options) {
  PAGELLM_ASSIGN_OR_RETURN(chat::ContentFormatOption content_format,
                           chat::ParseContentFormatOption(options.chat_template_content_format));
  std::unique_ptr<OpenAiServer> s(new OpenAiServer(engine, std::move(options)));
  s->metrics_.SetWeightFormats(engine.core().weight_formats());
  auto tmpl = chat::LoadChatTemplate(engine.core().tokenizer_dir(), s->options_.chat_template_path);
  if (tmpl.ok()) {
    s->template_.emplace(std::move(*tmpl));
  } else if (!s->options_.chat_template_path.empty()) {
    return tmpl.status().WithPrefix("--chat-template");
  } else {
    // A base model without a chat template can still serve /v1/completions.
    s->template_error_ = tmpl.status().message();
  }
  // As vLLM: "auto" asks the template whether it loops over message content.
  s->content_format_ = content_format.format;
  if (content_format.automatic && s->template_) {
    s->content_format_ = s->template_->detected_content_format();
    PLOG_INFO("detected the chat template content format to be '{}' (--chat-template-content-format overrides it)",
              chat::ContentFormatName(s->content_format_));
  }
  return s;
}

std::string OpenAiServer::NextId(const char* prefix) {
  uint64_t n = next_id_.fetch_add(1);
  return fmt::format("{}-{:016x}{:08x}", prefix, id_salt_ ^ (n * 0xBF58476D1CE4E5B9ull), n & 0xffffffffu);
}

void OpenAiServer::RespondError(const std::shared_ptr<HttpExchange>& ex, const ApiError& error) const {
  ex->Respond(error.http_status, "application/json", ApiErrorBody(error),
              error.http_status == 405 ? "Allow: GET, POST\r\n" : "");
}

void OpenAiServer::RespondJson(const std::shared_ptr<HttpExchange>& ex, const OrderedJson& body) const {
  ex->Respond(200, "application/json", DumpJson(body));
}

Status OpenAiServer::CheckModel(const std::string& model) const {
  if (model.empty() || model == options_.served_model_name) return OkStatus();
  return NotFoundError(fmt::format("The model `{}` does not exist.", model));
}

Status OpenAiServer::CheckLength(size_t num_prompt_tokens, const SamplingParams& params, const char* what) const {
  int64_t max_len = engine_.core().max_model_len();
  int64_t prompt = static_cast<int64_t>(num_prompt_tokens);
  if (prompt >= max_len) {
    return InvalidArgumentError(fmt::format(
        "This model's maximum context length is {} tokens. However, your request has {} input tokens. "
        "Please reduce the length of the input {}.", max_len, prompt, what));
  }
  if (params.max_tokens && prompt + *params.max_tokens > max_len) {
    return InvalidArgumentError(fmt::format(
        "This model's maximum context length is {} tokens. However, you requested {} tokens ({} in the {}, {} in "
        "the completion). Please reduce the length of the {} or completion.",
        max_len, prompt + *params.max_tokens, prompt, what, *params.max_tokens, what));
  }
  return OkStatus();
}

void OpenAiServer::Handle(std::shared_ptr<HttpExchange> ex) {
  if (draining_) {
    return RespondError(ex, MakeApiError(503, "The server is shutting down and does not accept new requests."));
  }
  // Last line of defence: a bug in a handler must not take the process down.
  try {
    Route(ex);
  } catch (const std::exception& e) {
    PLOG_ERROR("internal error on {}: {}", ex->request().target, e.what());
    RespondError(ex, MakeApiError(500, fmt::format("internal error: {}", e.what())));
  }
}

namespace {

struct RouteInfo {
  const char* path;
  const char* method;
  bool json_body;
};

constexpr RouteInfo kRoutes[] = {
    {"/v1/chat/completions", "POST", true}, {"/v1/completions", "POST", true}, {"/v1/models", "GET", false},
    {"/tokenize", "POST", true},           {"/detokenize", "POST", true},     {"/health", "GET", false},
    {"/version", "GET", false},            {"/metrics", "GET", false},    {"/reset_prefix_cache", "POST", false},
    {"/preempt_requests", "POST", true},
};

}  // namespace

void OpenAiServer::Route(const std::shared_ptr<HttpExchange>& ex) {
  const HttpRequest& req = ex->request();
  std::string path = req.path();
  const RouteInfo* route = nullptr;
  for (const RouteInfo& r : kRoutes) {
    if (path == r.path) route = &r;
  }
  if (route == nullptr) return RespondError(ex, MakeApiError(404, fmt::format("Route {} not found.", path)));
  if (req.method != route->method && !(req.method == "HEAD" && std::string(route->method) == "GET")) {
    return RespondError(ex, MakeApiError(405, fmt::format("Method {} not allowed on {}.", req.method, path)));
  }
  const bool needs_key = path.rfind("/v1/", 0) == 0 || path == "/reset_prefix_cache" || path == "/preempt_requests";
  if (!options_.api_key.empty() && needs_key && req.authorization != "Bearer " + options_.api_key) {
    return RespondError(ex, MakeApiError(401, "Unauthorized: a valid API key is required (Authorization: Bearer)."));
  }
  if (path == "/health") {
    Status health = engine_.Health();
    if (!health.ok()) return RespondError(ex, MakeApiError(503, health.message()));
    return ex->Respond(200, "application/json", "");
  }
  if (path == "/version") return RespondJson(ex, {{"version", options_.version}});
  if (path == "/metrics") {
    return ex->Respond(200, "text/plain; version=0.0.4; charset=utf-8",
                       metrics_.Render(engine_.stats(), !engine_.has_work()));
  }
  if (path == "/v1/models") return HandleModels(ex);
  if (path == "/reset_prefix_cache") {
    // vLLM's endpoint; it only succeeds while no request holds KV blocks (cached
    // prefixes of idle blocks are already counted free by vllm:kv_cache_usage_perc).
    return engine_.ResetPrefixCache([ex](bool reset) {
      OrderedJson body = {{"reset", reset}};
      if (!reset) body["reason"] = "requests hold KV blocks; the cache can be reset when they are done";
      ex->Respond(200, "application/json", body.dump());
    });
  }
  OrderedJson body = OrderedJson::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return RespondError(ex, MakeApiError(400, "Malformed JSON in the request body."));
  if (!body.is_object()) return RespondError(ex, MakeApiError(400, "The request body must be a JSON object."));
  if (path == "/v1/chat/completions") return HandleChat(ex, body);
  if (path == "/v1/completions") return HandleCompletion(ex, body);
  if (path == "/tokenize") return HandleTokenize(ex, body);
  if (path == "/preempt_requests") return HandlePreempt(ex, body);
  return HandleDetokenize(ex, body);
}

void OpenAiServer::HandlePreempt(const std::shared_ptr<HttpExchange>& ex, const OrderedJson& body) {
  // The reclaim that relieves real KV pressure (a prefix-cache reset cannot: the blocks
  // are held by running requests); preempted requests finish later, nothing is lost.
  StatusOr<PreemptionRequest> request = ParsePreemptRequest(body);
  if (!request.ok()) return RespondError(ex, ApiErrorFromStatus(request.status()));
  engine_.PreemptRequests(*request, [ex](StatusOr<EnginePreemption> r) {
    if (!r.ok()) {
      const ApiError error = ApiErrorFromStatus(r.status());
      return ex->Respond(error.http_status, "application/json", ApiErrorBody(error));
    }
    ex->Respond(200, "application/json", PreemptAnswerJson(*r).dump());
  });
}

void OpenAiServer::HandleModels(const std::shared_ptr<HttpExchange>& ex) {
  OrderedJson model = {{"id", options_.served_model_name}, {"object", "model"}, {"created", created_},
                       {"owned_by", "pagellm"}, {"root", options_.model_path}, {"parent", nullptr},
                       {"max_model_len", engine_.core().max_model_len()}, {"permission", OrderedJson::array()}};
  RespondJson(ex, {{"object", "list"}, {"data", OrderedJson::array({model})}});
}

StatusOr<std::string> OpenAiServer::RenderChat(const OrderedJson& messages, const OrderedJson& tools,
                                               bool add_generation_prompt, bool continue_final_message,
                                               const OrderedJson& kwargs) const {
  if (!template_) {
    return InvalidArgumentError(fmt::format("messages: this model has no chat template ({}); use /v1/completions "
                                            "or start the server with --chat-template", template_error_));
  }
  if (continue_final_message && add_generation_prompt) {
    return InvalidArgumentError("continue_final_message: cannot be combined with add_generation_prompt");
  }
  PAGELLM_ASSIGN_OR_RETURN(std::string text, template_->Render(messages, tools, add_generation_prompt, kwargs));
  if (continue_final_message) {
    // As transformers: cut the rendered text after the final message's content.
    const OrderedJson& last = messages.back();
    std::string content = last.contains("content") && last["content"].is_string() ? last["content"].get<std::string>() : "";
    size_t pos = content.empty() ? std::string::npos : text.rfind(content);
    if (pos != std::string::npos) text.resize(pos + content.size());
  }
  return text;
}

}  // namespace pagellm::server
