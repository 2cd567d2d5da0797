// `pagellm serve MODEL`: the OpenAI-compatible HTTP server (vLLM's `vllm serve`), with
// vLLM's flag names. Unknown flags fail with the closest valid name. SIGTERM/SIGINT
// drain: new requests get 503, the listener closes, running requests finish within
// --shutdown-timeout seconds, then the process exits 0.
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "common/logging.h"
#include "engine/llm_engine.h"
#include "server/closest_name.h"
#include "net/http_server.h"
#include "server/openai_server.h"
#include "server/response_parser.h"

namespace pagellm::cli {
namespace {

struct ServeFlags {
  EngineConfig engine;
  std::string host = "0.0.0.0";
  int port = 8000;
  std::vector<std::string> served_model_name;
  std::string api_key;
  std::string chat_template;
  std::string chat_template_content_format = "auto";
  bool enable_auto_tool_choice = false;
  std::string tool_call_parser, reasoning_parser;
  double shutdown_timeout_s = 30.0;
  int http_threads = 2;
  bool disable_log_stats = false;
  std::optional<uint64_t> seed;
};

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Rejects leftover arguments, naming the closest known flag for a mistyped one.
Status CheckExtras(const CLI::App& cmd) {
  std::vector<std::string> extras = cmd.remaining();
  if (extras.empty()) return OkStatus();
  std::vector<std::string> names;
  for (const CLI::Option* opt : cmd.get_options()) {
    for (const std::string& n : opt->get_lnames()) names.push_back("--" + n);
  }
  const std::string& bad = extras.front();
  std::string typed = bad.substr(0, bad.find('='));
  if (typed.rfind("-", 0) != 0) return InvalidArgumentError(fmt::format("unexpected argument '{}'", bad));
  std::string best = server::ClosestName(typed, names);
  if (best.empty()) return InvalidArgumentError(fmt::format("unrecognized argument {}", typed));
  return InvalidArgumentError(fmt::format("unrecognized argument {}; did you mean {}?", typed, best));
}

Status CheckFlags(const ServeFlags& f) {
  if (f.enable_auto_tool_choice && f.tool_call_parser.empty()) {
    return InvalidArgumentError("--enable-auto-tool-choice requires --tool-call-parser");
  }
  return server::ResponseParser::CheckNames(f.reasoning_parser, f.tool_call_parser);
}

// Waits for SIGINT/SIGTERM (blocked in every thread), logging stats every 10 s;
// SIGUSR2 resets the prefix cache (as POST /reset_prefix_cache).
// Returns the engine's health error instead when it breaks (a tensor-parallel rank
// died or hung): /health has answered 503 since, and the caller exits non-zero.
Status WaitForSignal(LlmEngine& engine, server::OpenAiServer& api, bool log_stats) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR2);
  double next_log = Now() + 10.0;
  for (;;) {
    timespec timeout{1, 0};
    int sig = sigtimedwait(&set, nullptr, &timeout);
    if (sig == SIGINT || sig == SIGTERM) {
      PLOG_INFO("received {}, shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
      return OkStatus();
    }
    if (sig == SIGUSR2) {
      PLOG_INFO("received SIGUSR2: resetting the prefix cache");
      engine.ResetPrefixCache([](bool) {});  // the engine thread logs the outcome
    }
    if (Status health = engine.Health(); !health.ok()) {
      PLOG_ERROR("engine unhealthy, exiting: {}", health.message());
      return health;
    }
    if (log_stats && Now() >= next_log) {
      next_log = Now() + 10.0;
      std::string line = api.metrics().LogLine(engine.stats(), !engine.has_work(), Now());
      if (!line.empty()) PLOG_INFO("{}", line);
    }
  }
}

// Drain: answer new requests (and /health) with 503, let running ones finish, then
// close the listener. It stays open while draining so a load balancer or router sees
// 503 on /health, not a refused connection it might take for a crash.
void Drain(net::HttpServer& http, server::OpenAiServer& api, double timeout_s) {
  api.BeginDrain();
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  double deadline = Now() + timeout_s;
  if (api.num_inflight() > 0) PLOG_INFO("waiting up to {:.0f} s for {} running requests", timeout_s, api.num_inflight());
  // In-flight engine requests first, then their last bytes (responses still queued).
  // Once no engine request is left, sockets get a short grace period to flush: an
  // exchange that never completes (a client that stopped reading a finished response)
  // must not hold the whole shutdown for --shutdown-timeout.
  constexpr double kFlushGraceS = 2.0;
  double idle_since = 0.0;
  while ((api.num_inflight() > 0 || http.num_active_exchanges() > 0) && Now() < deadline) {
    if (api.num_inflight() > 0) {
      idle_since = 0.0;
    } else if (idle_since == 0.0) {
      idle_since = Now();
    } else if (Now() - idle_since > kFlushGraceS) {
      PLOG_WARN("shutdown: {} responses still unsent after {:.0f} s; closing", http.num_active_exchanges(),
                kFlushGraceS);
      break;
    }
    timespec wait{0, 50'000'000};
    if (sigtimedwait(&set, nullptr, &wait) > 0) {
      PLOG_WARN("second signal: stopping without waiting for {} requests", api.num_inflight());
      return;
    }
  }
  http.StopAccepting();
  if (api.num_inflight() > 0) PLOG_WARN("shutdown timeout: aborting {} requests", api.num_inflight());
}

Status RunServe(ServeFlags& f) {
  PAGELLM_RETURN_IF_ERROR(CheckFlags(f));
  // Signals are taken synchronously by the main thread; block them before any thread
  // (engine, OpenMP, I/O) exists so every thread inherits the mask.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
  PAGELLM_ASSIGN_OR_RETURN(std::unique_ptr<LlmEngine> engine, LlmEngine::Create(f.engine));
  server::OpenAiServerOptions options;
  options.served_model_name = f.served_model_name.empty() ? f.engine.model : f.served_model_name.front();
  options.model_path = f.engine.model;
  options.api_key = f.api_key;
  if (options.api_key.empty() && std::getenv("VLLM_API_KEY") != nullptr) options.api_key = std::getenv("VLLM_API_KEY");
  options.enable_auto_tool_choice = f.enable_auto_tool_choice;
  options.tool_call_parser = f.tool_call_parser;
  options.reasoning_parser = f.reasoning_parser;
  options.chat_template_path = f.chat_template;
  options.chat_template_content_format = f.chat_template_content_format;
  options.version = PAGELLM_VERSION;
  PAGELLM_ASSIGN_OR_RETURN(std::unique_ptr<server::OpenAiServer> api, server::OpenAiServer::Create(*engine, options));
  net::HttpServerOptions http_options;
  http_options.host = f.host;
  http_options.port = f.port;
  http_options.num_threads = f.http_threads;
  auto http = std::make_unique<net::HttpServer>(http_options,
                                                   [&api](std::shared_ptr<net::HttpExchange> ex) { api->Handle(ex); });
  PAGELLM_RETURN_IF_ERROR(http->Start());
  engine->Start();
  PLOG_INFO("serving model '{}' ready on http://{}:{}", options.served_model_name, f.host, http->port());
  Status health = WaitForSignal(*engine, *api, !f.disable_log_stats);
  // A broken engine finishes nothing: no drain, stop at once and exit non-zero.
  if (health.ok()) Drain(*http, *api, f.shutdown_timeout_s);
  http->Stop();
  engine->Stop();
  // The engine's pending callbacks hold connections: free them before the I/O context.
  engine.reset();
  http.reset();
  if (!health.ok()) return health;
  PLOG_INFO("shutdown complete");
  return OkStatus();
}

}  // namespace

void RegisterServeCommand(CLI::App& app) {
  auto f = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand("serve", "serve a model over an OpenAI-compatible HTTP API (vllm serve)");
  cmd->add_option("model", f->engine.model, "model directory")->required();
  cmd->add_option("--host", f->host, "address to listen on")->capture_default_str();
  cmd->add_option("--port", f->port, "port to listen on (0: any free port)")->capture_default_str();
  cmd->add_option("--served-model-name", f->served_model_name, "model name(s) in the API (default: the model path)");
  cmd->add_option("--api-key", f->api_key, "require 'Authorization: Bearer KEY' on /v1 routes (env VLLM_API_KEY)");
  cmd->add_option("--chat-template", f->chat_template, "a Jinja file replacing the model's chat template");
  cmd->add_option("--chat-template-content-format", f->chat_template_content_format,
                  "message content as a string or as OpenAI's list of parts (auto: detect from the template)")
      ->check(CLI::IsMember({"auto", "string", "openai"}))
      ->capture_default_str();
  cmd->add_flag("--enable-auto-tool-choice", f->enable_auto_tool_choice, "let the model call tools (tool_choice auto)");
  cmd->add_option("--tool-call-parser", f->tool_call_parser, "hermes (Qwen2.5/Qwen3) or qwen3_coder (Qwen3.5)");
  cmd->add_option("--reasoning-parser", f->reasoning_parser, "qwen3: split <think> into reasoning_content");
  cmd->add_option("--shutdown-timeout", f->shutdown_timeout_s, "seconds running requests get to finish on SIGTERM")
      ->capture_default_str();
  cmd->add_option("--http-threads", f->http_threads, "I/O threads of the HTTP server")->capture_default_str();
  cmd->add_flag("--disable-log-stats", f->disable_log_stats, "no periodic throughput log line");
  cmd->add_option("--seed", f->seed, "engine seed (dummy weights, unseeded requests)");
  AddEngineFlags(cmd, &f->engine);
  cmd->allow_extras();
  cmd->callback([f, cmd] {
    if (!ReportStatus(CheckExtras(*cmd))) return;
    if (f->seed) f->engine.seed = *f->seed;
    if (RunIfMpiWorkerRank(f->engine)) return;  // mpirun: ranks > 0 serve no HTTP
    ReportStatus(RunServe(*f));
  });
}

}  // namespace pagellm::cli
