#include "router/router_service.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <fmt/format.h>

#include "net/api_error.h"
#include "router/relay.h"

namespace pagellm::router {

double SteadyNowS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void RespondError(const std::shared_ptr<net::HttpExchange>& ex, int status, const std::string& message) {
  ex->Respond(status, "application/json", net::ApiErrorBody(net::MakeApiError(status, message)));
}

RouterService::RouterService(WorkerRegistry& registry, RouterMetrics& metrics, RouterOptions options,
                             boost::asio::io_context& client_io)
    : registry_(registry), metrics_(metrics), options_(options), client_io_(client_io),
      policy_(options.policy, options.cache_aware), sessions_(options.max_sessions) {}

void RouterService::Handle(std::shared_ptr<net::HttpExchange> ex) {
  try {
    Route(ex);
  } catch (const std::exception& e) {
    RespondError(ex, 500, fmt::format("internal router error: {}", e.what()));
  }
}

void RouterService::Route(const std::shared_ptr<net::HttpExchange>& ex) {
  const net::HttpRequest& req = ex->request();
  const std::string path = req.path();
  auto want = [&](const char* method) {
    if (req.method == method) return true;
    RespondError(ex, 405, fmt::format("Method {} not allowed on {}.", req.method, path));
    return false;
  };
  if (path == "/v1/chat/completions" || path == "/v1/completions") {
    if (want("POST")) HandleGenerate(ex, path == "/v1/chat/completions");
    return;
  }
  if (path == "/v1/models") {
    if (want("GET")) HandleModels(ex);
    return;
  }
  if (path == "/health") {
    bool any = false;
    for (const WorkerView& w : registry_.Snapshot(SteadyNowS())) any = any || w.routable();
    if (any) return ex->Respond(200, "application/json", "");
    return RespondError(ex, 503, "no worker is ready");
  }
  if (path == "/metrics") {
    return ex->Respond(200, "text/plain; version=0.0.4; charset=utf-8", metrics_.Render(registry_.Snapshot(SteadyNowS())));
  }
  if (path.rfind("/admin/workers", 0) == 0) return HandleAdmin(ex);
  RespondError(ex, 404, fmt::format("Route {} not found.", path));
}

std::optional<WorkerView> RouterService::Choose(RelayJob& job) {
  std::vector<WorkerView> ready;
  for (WorkerView& w : registry_.Snapshot(SteadyNowS())) {
    if (w.routable() && job.tried.count(w.url) == 0) ready.push_back(std::move(w));
  }
  if (ready.empty()) return std::nullopt;
  std::vector<Candidate> candidates(ready.size());
  for (size_t i = 0; i < ready.size(); ++i) {
    candidates[i].num_inflight_requests = ready[i].num_inflight_requests;
    candidates[i].num_waiting = ready[i].metrics_fresh ? ready[i].num_waiting : 0.0;
    candidates[i].kv_usage = ready[i].kv_usage;
    if (policy_.uses_prefix()) candidates[i].matched_blocks = prefix_.MatchBlocks(ready[i].url, job.blocks);
  }
  std::optional<RouteChoice> bound;
  if (!job.session.empty()) {
    if (std::optional<std::string> url = sessions_.Lookup(job.session)) {
      for (size_t i = 0; i < ready.size() && !bound; ++i) {
        if (ready[i].url == *url) bound = RouteChoice{i, "session"};
      }
    }
  }
  RouteChoice choice = bound ? *bound : policy_.Pick(candidates, job.blocks.size());
  const WorkerView& w = ready[choice.idx];
  if (!job.session.empty() && !bound && sessions_.Bind(job.session, w.url)) metrics_.OnSessionMove();
  // The estimated hit rate is a property of the routing, whatever the policy.
  size_t matched = policy_.uses_prefix() ? candidates[choice.idx].matched_blocks : prefix_.MatchBlocks(w.url, job.blocks);
  metrics_.OnPrefix(matched, job.blocks.size());
  prefix_.Insert(w.url, job.blocks);
  metrics_.OnDecision(w.url, choice.reason);
  return w;
}

std::string RouterService::SessionOf(const net::HttpRequest& req, const OrderedJson& body) const {
  if (!options_.session_header.empty()) {
    std::string session = req.header(options_.session_header);
    if (!session.empty()) return session;
  }
  auto user = body.find("user");
  return user != body.end() && user->is_string() ? user->get<std::string>() : "";
}

void RouterService::HandleGenerate(const std::shared_ptr<net::HttpExchange>& ex, bool chat) {
  OrderedJson body = OrderedJson::parse(ex->request().body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return RespondError(ex, 400, "Malformed JSON in the request body.");
  if (!body.is_object()) return RespondError(ex, 400, "The request body must be a JSON object.");
  auto job = std::make_shared<RelayJob>(*this, ex, ex->request().path(), std::move(body), chat, SteadyNowS());
  job->authorization = ex->request().authorization;
  job->session = SessionOf(ex->request(), job->body);
  ex->SetCancelHandler([job] { job->cancelled = true; });
  boost::asio::co_spawn(client_io_, RunRelay(job), boost::asio::detached);
}

void RouterService::HandleModels(const std::shared_ptr<net::HttpExchange>& ex) {
  std::optional<WorkerView> w;
  for (WorkerView& v : registry_.Snapshot(SteadyNowS())) {
    if (v.routable()) {
      w = std::move(v);
      break;
    }
  }
  if (!w) return RespondError(ex, 503, "no worker is ready");
  boost::asio::co_spawn(client_io_, RelayGet(ex, *w, "/v1/models"), boost::asio::detached);
}

void RouterService::HandleAdmin(const std::shared_ptr<net::HttpExchange>& ex) {
  const net::HttpRequest& req = ex->request();
  const std::string path = req.path();
  if (path == "/admin/workers" && req.method == "GET") {
    OrderedJson list = OrderedJson::array();
    for (const WorkerView& w : registry_.Snapshot(SteadyNowS())) {
      list.push_back({{"url", w.url}, {"health", WorkerHealthName(w.health)},
                      {"inflight_requests", w.num_inflight_requests}, {"inflight_tokens", w.num_inflight_tokens},
                      {"kv_cache_usage_perc", w.kv_usage}, {"metrics_fresh", w.metrics_fresh},
                      {"num_requests", w.num_requests}, {"prefix_blocks", prefix_.NumBlocks(w.url)}});
    }
    return ex->Respond(200, "application/json", OrderedJson({{"object", "list"}, {"data", list}}).dump());
  }
  std::string url;
  if (req.method == "DELETE" && path == "/admin/workers") {
    size_t q = req.target.find("url=");
    if (q != std::string::npos) url = req.target.substr(q + 4);
  } else if (req.method == "POST") {
    OrderedJson body = OrderedJson::parse(req.body, nullptr, false);
    if (body.is_object() && body.contains("url") && body["url"].is_string()) url = body["url"].get<std::string>();
  } else {
    return RespondError(ex, 405, fmt::format("Method {} not allowed on {}.", req.method, path));
  }
  if (url.empty()) return RespondError(ex, 400, "url: a worker URL (\"http://HOST:PORT\") is required");
  Status s;
  if (path == "/admin/workers" && req.method == "POST") {
    s = registry_.Add(url);
  } else if (path == "/admin/workers/drain") {
    s = registry_.Drain(url);
  } else if (path == "/admin/workers/remove" || req.method == "DELETE") {
    s = registry_.Remove(url);
    if (s.ok()) prefix_.RemoveWorker(*WorkerRegistry::NormalizeUrl(url));
  } else {
    return RespondError(ex, 404, fmt::format("Route {} not found.", path));
  }
  if (!s.ok()) {
    net::ApiError e = net::ApiErrorFromStatus(s);
    if (s.code() == StatusCode::kAlreadyExists) e.http_status = 409;
    return ex->Respond(e.http_status, "application/json", net::ApiErrorBody(e));
  }
  ex->Respond(200, "application/json", OrderedJson({{"ok", true}, {"url", url}}).dump());
}

}  // namespace pagellm::router
