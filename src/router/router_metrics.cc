#include "router/router_metrics.h"

namespace pagellm::router {

RouterMetrics::RouterMetrics(std::string policy) : policy_(std::move(policy)) {
  metrics::Labels p = {{"policy", policy_}};
  retries_ = registry_.AddCounter("pagellm_router:retries_total",
                                  "Requests re-sent to another worker after failing before their first byte.", p);
  resumes_ = registry_.AddCounter("pagellm_router:resumes_total",
                                  "Streams cut after their first byte and resumed on another worker.", p);
  session_moves_ = registry_.AddCounter("pagellm_router:session_moves_total",
                                        "Sessions re-bound to another worker (theirs could not take a request).", p);
  client_errors_ = registry_.AddCounter("pagellm_router:client_errors_total",
                                        "Requests answered with an error by the router itself.", p);
  prefix_matched_ = registry_.AddCounter("pagellm_router:prefix_matched_blocks_total",
                                         "Prompt blocks the chosen worker was believed to hold.", p);
  prefix_queried_ = registry_.AddCounter("pagellm_router:prefix_query_blocks_total", "Prompt blocks routed.", p);
  prefix_hit_rate_ = registry_.AddGauge("pagellm_router:prefix_hit_rate_estimate",
                                        "Estimated prefix-cache hit rate (matched / routed blocks).", p);
  std::vector<double> bounds = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0};
  added_latency_ = registry_.AddHistogram("pagellm_router:added_latency_seconds",
                                          "Time from reading a request to sending it to a worker.", p, bounds);
}

RouterMetrics::WorkerSeries& RouterMetrics::SeriesFor(const std::string& worker) {
  auto it = workers_.find(worker);
  if (it != workers_.end()) return it->second;
  metrics::Labels l = {{"worker", worker}};
  WorkerSeries& s = workers_[worker];
  s.requests = registry_.AddCounter("pagellm_router:requests_total", "Requests sent to a worker (attempts).", l);
  s.errors = registry_.AddCounter("pagellm_router:worker_errors_total",
                                  "Attempts that failed on a worker (connect, 5xx, broken stream).", l);
  s.inflight = registry_.AddGauge("pagellm_router:inflight_requests", "Requests the router has running there.", l);
  s.healthy = registry_.AddGauge("pagellm_router:worker_ready", "1 when the worker gets new requests.", l);
  return s;
}

void RouterMetrics::OnDecision(const std::string& worker, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  auto key = std::make_pair(worker, reason);
  auto it = decisions_.find(key);
  if (it == decisions_.end()) {
    metrics::Labels l = {{"worker", worker}, {"policy", policy_}, {"reason", reason}};
    it = decisions_.emplace(key, registry_.AddCounter("pagellm_router:decisions_total",
                                                      "Routing decisions by worker, policy and reason.", l)).first;
  }
  it->second->Inc();
}

void RouterMetrics::OnRequest(const std::string& worker) {
  std::lock_guard<std::mutex> lock(mu_);
  SeriesFor(worker).requests->Inc();
}

void RouterMetrics::OnError(const std::string& worker) {
  std::lock_guard<std::mutex> lock(mu_);
  SeriesFor(worker).errors->Inc();
}

void RouterMetrics::OnPrefix(size_t matched_blocks, size_t num_blocks) {
  prefix_matched_->Inc(static_cast<double>(matched_blocks));
  prefix_queried_->Inc(static_cast<double>(num_blocks));
  double q = prefix_queried_->value();
  prefix_hit_rate_->Set(q > 0 ? prefix_matched_->value() / q : 0.0);
}

std::string RouterMetrics::Render(const std::vector<WorkerView>& workers) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [name, s] : workers_) {
      s.inflight->Set(0);
      s.healthy->Set(0);
    }
    for (const WorkerView& w : workers) {
      WorkerSeries& s = SeriesFor(w.url);
      s.inflight->Set(static_cast<double>(w.num_inflight_requests));
      s.healthy->Set(w.routable() ? 1 : 0);
    }
  }
  return registry_.Render();
}

}  // namespace pagellm::router
