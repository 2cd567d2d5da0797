// OpenAiServer: vLLM's OpenAI-compatible HTTP API over an LlmEngine.
//
//   PAGELLM_ASSIGN_OR_RETURN(auto api, OpenAiServer::Create(*engine, options));
//   HttpServer http(http_options, [&](auto ex) { api->Handle(std::move(ex)); });
//
// Routes: POST /v1/chat/completions, POST /v1/completions, GET /v1/models,
// POST /tokenize, POST /detokenize, GET /health, GET /version, GET /metrics; admin:
// POST /reset_prefix_cache, POST /preempt_requests (preempt_request.h).
// Errors use OpenAI's shape (api_error.h): 400 bad parameters / JSON / prompt too long,
// 401 wrong API key (routes under /v1 when --api-key is set), 404 unknown model or
// route, 405 wrong method, 413 body too large (HttpServer), 503 while draining.
// Handle() runs on the connection's strand and never blocks on the engine.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "chat/chat_template.h"
#include "common/json.h"
#include "engine/llm_engine.h"
#include "net/api_error.h"
#include "net/http_server.h"
#include "server/generation_job.h"
#include "server/openai_request.h"
#include "server/server_metrics.h"

namespace pagellm::server {

struct OpenAiServerOptions {
  std::string served_model_name;   // the name clients send as "model"
  std::string model_path;          // reported as "root" in /v1/models
  std::string api_key;             // "" => no authentication
  bool enable_auto_tool_choice = false;
  std::string tool_call_parser;    // "" | hermes | qwen3_coder
  std::string reasoning_parser;    // "" | qwen3
  std::string chat_template_path;  // "" => the model's template
  std::string chat_template_content_format = "auto";  // auto | string | openai (content_format.h)
  std::string version;
};

class OpenAiServer {
 public:
  static StatusOr<std::unique_ptr<OpenAiServer>> Create(LlmEngine& engine, OpenAiServerOptions options);

  void Handle(std::shared_ptr<HttpExchange> exchange);
  // From now on every request gets 503 (graceful shutdown).
  void BeginDrain() { draining_ = true; }
  // Generation requests accepted and not yet finished in the engine.
  int64_t num_inflight() const { return num_inflight_.load(); }
  ServerMetrics& metrics() { return metrics_; }

 private:
  OpenAiServer(LlmEngine& engine, OpenAiServerOptions options);

  void Route(const std::shared_ptr<HttpExchange>& ex);
  void HandleChat(const std::shared_ptr<HttpExchange>& ex, const OrderedJson& body);
  void HandleCompletion(const std::shared_ptr<HttpExchange>& ex, const OrderedJson& body);
  void HandleTokenize(const std::shared_ptr<HttpExchange>& ex, const OrderedJson& body);
  void HandleDetokenize(const std::shared_ptr<HttpExchange>& ex, const OrderedJson& body);
  void HandleModels(const std::shared_ptr<HttpExchange>& ex);
  // POST /preempt_requests (preempt_request.h).
  void HandlePreempt(const std::shared_ptr<HttpExchange>& ex, const OrderedJson& body);

  // Renders `messages` (normalized) with the chat template.
  StatusOr<std::string> RenderChat(const OrderedJson& messages, const OrderedJson& tools, bool add_generation_prompt,
                                   bool continue_final_message, const OrderedJson& kwargs) const;
  Status CheckModel(const std::string& model) const;
  Status CheckLength(size_t num_prompt_tokens, const SamplingParams& params, const char* what) const;
  std::string NextId(const char* prefix);
  void RespondError(const std::shared_ptr<HttpExchange>& ex, const ApiError& error) const;
  void RespondJson(const std::shared_ptr<HttpExchange>& ex, const OrderedJson& body) const;

  LlmEngine& engine_;
  OpenAiServerOptions options_;
  ServerMetrics metrics_;
  std::optional<chat::ChatTemplate> template_;
  std::string template_error_;
  chat::ContentFormat content_format_ = chat::ContentFormat::kString;
  std::atomic<bool> draining_{false};
  std::atomic<int64_t> num_inflight_{0};
  std::atomic<uint64_t> next_id_{0};
  uint64_t id_salt_ = 0;
  int64_t created_ = 0;
};

}  // namespace pagellm::server
