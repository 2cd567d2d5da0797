#include "router/health_checker.h"

#include <fstream>
#include <set>
#include <sstream>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include "common/json.h"
#include "common/logging.h"
#include "metrics/prometheus_text.h"
#include "net/http_client.h"
#include "router/router_service.h"

namespace pagellm::router {
namespace {

namespace asio = boost::asio;

asio::awaitable<net::HttpPostResult> Call(const WorkerView& w, const char* method, const std::string& path,
                                          std::string body, std::chrono::milliseconds timeout, std::string* out) {
  net::HttpPost call;
  call.method = method;
  call.host_header = w.target.HostHeader();
  call.path = path;
  call.body = std::move(body);
  call.idle_timeout = std::chrono::duration_cast<std::chrono::seconds>(timeout);
  if (call.idle_timeout.count() < 1) call.idle_timeout = std::chrono::seconds(1);
  co_return co_await net::StreamingPost(w.endpoints, call, [out](std::string_view b) { out->append(b); });
}

// A real 1-token generation with the worker's first model: "" when it succeeded, else
// what went wrong.
asio::awaitable<std::string> GenerateOneToken(const WorkerView& w, std::chrono::milliseconds timeout) {
  std::string models;
  net::HttpPostResult r = co_await Call(w, "GET", "/v1/models", "", timeout, &models);
  if (!r.error.empty()) co_return "GET /v1/models: " + r.error;
  Json list = Json::parse(models, nullptr, false);
  if (!list.is_object() || !list.contains("data") || !list["data"].is_array() || list["data"].empty()) {
    co_return "GET /v1/models lists no model";
  }
  Json req = {{"model", list["data"][0].value("id", "")}, {"prompt", "ping"}, {"max_tokens", 1}, {"temperature", 0}};
  std::string out;
  r = co_await Call(w, "POST", "/v1/completions", req.dump(), timeout, &out);
  if (!r.error.empty()) co_return "1-token completion: " + r.error;
  if (out.find("\"choices\"") == std::string::npos) co_return "1-token completion answered " + out.substr(0, 200);
  co_return "";
}

// `not_ready_reason`: what the worker's last failed probe said while it was not ready,
// so the reason is logged once each time it changes, not every round.
asio::awaitable<void> Probe(WorkerRegistry& registry, WorkerView w, HealthCheckerOptions options, bool generate,
                            std::string* not_ready_reason) {
  std::string text;
  net::HttpPostResult r = co_await Call(w, "GET", "/metrics", "", options.timeout, &text);
  bool scraped = r.error.empty();
  if (scraped) {
    metrics::PrometheusSamples s = metrics::ParsePrometheusText(text);
    auto get = [&](const char* name, double fallback) {
      auto it = s.find(name);
      return it == s.end() ? fallback : it->second;
    };
    registry.OnMetrics(w.url, get("vllm:kv_cache_usage_perc", 0.0), get("vllm:num_requests_waiting", 0.0),
                       SteadyNowS());
  }
  if (w.health == WorkerHealth::kDraining) co_return;
  bool ready = w.health == WorkerHealth::kReady;
  if (ready && !scraped) {
    PLOG_WARN("router: worker {} failed its scrape ({}); taken out", w.url, r.error);
    registry.SetHealth(w.url, WorkerHealth::kFailed);
    co_return;
  }
  if (!ready || generate) {
    // (Not a ?: around co_await: g++ 12 miscompiles that.)
    std::string failure = "GET /metrics: " + r.error;
    if (scraped) failure = co_await GenerateOneToken(w, options.timeout);
    bool ok = failure.empty();
    if (ok && !ready) PLOG_INFO("router: worker {} is ready", w.url);
    if (!ok && ready) PLOG_WARN("router: worker {} failed a 1-token generation ({}); taken out", w.url, failure);
    if (!ok && !ready && failure != *not_ready_reason) PLOG_INFO("router: worker {} not ready: {}", w.url, failure);
    *not_ready_reason = failure;
    registry.SetHealth(w.url, ok ? WorkerHealth::kReady : WorkerHealth::kFailed);
  }
}

}  // namespace

void HealthChecker::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { Loop(); });
}

void HealthChecker::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void HealthChecker::Loop() {
  for (;;) {
    RunRound();
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_for(lock, options_.interval, [&] { return stop_; })) return;
  }
}

void HealthChecker::RunRound() {
  if (!options_.worker_file.empty()) SyncWorkerFile();
  bool generate = options_.generate_every > 0 && round_++ % options_.generate_every == 0;
  asio::io_context io;
  for (const WorkerView& w : registry_.Snapshot(SteadyNowS())) {
    asio::co_spawn(io, Probe(registry_, w, options_, generate, &not_ready_reason_[w.url]), asio::detached);
  }
  io.run();  // bounded: every call has its timeout
}

// The file lists one worker URL per line ('#' starts a comment). Workers it adds are
// removed again when their line goes; workers added otherwise are left alone.
void HealthChecker::SyncWorkerFile() {
  std::ifstream in(options_.worker_file);
  if (!in) return;
  std::stringstream ss;
  ss << in.rdbuf();
  if (ss.str() == file_state_) return;
  file_state_ = ss.str();
  std::set<std::string> wanted;
  std::string line;
  while (std::getline(ss, line)) {
    line = line.substr(0, line.find('#'));
    line.erase(0, line.find_first_not_of(" \t\r"));
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (line.empty()) continue;
    StatusOr<std::string> url = WorkerRegistry::NormalizeUrl(line);
    if (!url.ok()) {
      PLOG_WARN("router: {}: {}", options_.worker_file, url.status().message());
      continue;
    }
    wanted.insert(*url);
    Status s = registry_.Add(*url, /*from_file=*/true);
    if (s.ok()) PLOG_INFO("router: worker {} added from {}", *url, options_.worker_file);
  }
  for (const WorkerView& w : registry_.Snapshot(SteadyNowS())) {
    if (w.from_file && wanted.count(w.url) == 0 && registry_.Remove(w.url).ok()) {
      PLOG_INFO("router: worker {} removed ({} no longer lists it)", w.url, options_.worker_file);
    }
  }
}

}  // namespace pagellm::router
