// RouterService: the `pagellm router` front. OpenAI-compatible routes relayed to a
// worker picked by the routing policy, plus the router's own /health, /metrics and the
// admin API. Reaches workers over HTTP only (net/), never links the engine.
//
//   RouterService router(registry, metrics, options, client_io);
//   net::HttpServer http(http_options, [&](auto ex) { router.Handle(std::move(ex)); });
//
// Routes:
//   POST /v1/chat/completions, /v1/completions   relayed (streams event by event)
//   GET  /v1/models                              from a ready worker
//   GET  /health                                 200 when a worker is ready, else 503
//   GET  /metrics                                pagellm_router:* (router_metrics.h)
//   GET  /admin/workers                          [{url, health, inflight, kv, ...}]
//   POST /admin/workers {"url"}                  add (probed before it gets traffic)
//   POST /admin/workers/drain {"url"}            no new requests, running ones finish
//   POST /admin/workers/remove {"url"}  (or DELETE /admin/workers?url=...)
// Sessions: requests naming one (x-session-id header or `user`) stick to one worker
// (session_affinity.h).
// Failures: an attempt that fails before the client got a byte (connect error, 5xx,
// 429, a cut) goes to another worker, up to max_attempts workers; a stream cut after
// its first byte is resumed on another worker (stream_resume.h) up to max_resumes
// times; a worker that failed is marked kFailed until the health checker's probe
// succeeds. Errors are OpenAI-shaped.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>

#include "common/json.h"
#include "net/http_server.h"
#include "router/prefix_index.h"
#include "router/router_metrics.h"
#include "router/routing_policy.h"
#include "router/session_affinity.h"
#include "router/worker_registry.h"

namespace pagellm::router {

struct RouterOptions {
  PolicyKind policy = PolicyKind::kDefault;
  CacheAwareOptions cache_aware;
  int max_attempts = 3;
  int max_resumes = 3;
  std::chrono::seconds upstream_idle_timeout{300};
  // Conversation affinity (session_affinity.h): the header naming a request's session
  // ("" = headers off; OpenAI's `user` field is read either way) and how many are kept.
  std::string session_header = "x-session-id";
  size_t max_sessions = 100000;
};

struct RelayJob;

class RouterService {
 public:
  RouterService(WorkerRegistry& registry, RouterMetrics& metrics, RouterOptions options,
                boost::asio::io_context& client_io);
  void Handle(std::shared_ptr<net::HttpExchange> ex);
  PrefixIndex& prefix_index() { return prefix_; }

  // The worker for `job` (none tried before by it); nullopt when none is ready. A job
  // with a session goes to its bound worker when that one is ready, else the policy
  // picks and the session moves there for good (session_affinity.h).
  std::optional<WorkerView> Choose(RelayJob& job);
  // The session a request names: the session header, else the body's `user` string.
  std::string SessionOf(const net::HttpRequest& req, const OrderedJson& body) const;
  SessionAffinity& sessions() { return sessions_; }
  WorkerRegistry& registry() { return registry_; }
  RouterMetrics& metrics() { return metrics_; }
  const RouterOptions& options() const { return options_; }

 private:
  void Route(const std::shared_ptr<net::HttpExchange>& ex);
  void HandleGenerate(const std::shared_ptr<net::HttpExchange>& ex, bool chat);
  void HandleAdmin(const std::shared_ptr<net::HttpExchange>& ex);
  void HandleModels(const std::shared_ptr<net::HttpExchange>& ex);

  WorkerRegistry& registry_;
  RouterMetrics& metrics_;
  RouterOptions options_;
  boost::asio::io_context& client_io_;
  RoutingPolicy policy_;
  PrefixIndex prefix_;
  SessionAffinity sessions_;
};

// Seconds on the steady clock (routing and staleness timestamps).
double SteadyNowS();
// Answers with an OpenAI-shaped error.
void RespondError(const std::shared_ptr<net::HttpExchange>& ex, int status, const std::string& message);

}  // namespace pagellm::router
