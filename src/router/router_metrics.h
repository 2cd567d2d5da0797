// RouterMetrics: the router's own /metrics (Prometheus text), prefixed pagellm_router:.
//
//   RouterMetrics m("cache_aware");
//   m.OnDecision(url, "prefix");  m.OnRequest(url);  m.ObserveAddedLatency(0.0004);
//   std::string text = m.Render(registry.Snapshot(now));  // gauges refreshed first
//
// Per worker (label `worker`): requests, errors, decisions by reason (label `policy`
// too), in-flight requests. Global: retries (before the first byte, on another
// worker), resumes (a stream cut after its first byte continued elsewhere), the
// estimated prefix-hit rate (prompt blocks the chosen worker was believed to hold over
// blocks routed) and the router-added latency (request read -> request sent upstream).
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "metrics/metrics_registry.h"
#include "router/worker_registry.h"

namespace pagellm::router {

class RouterMetrics {
 public:
  explicit RouterMetrics(std::string policy);
  void OnDecision(const std::string& worker, const std::string& reason);
  void OnRequest(const std::string& worker);
  void OnError(const std::string& worker);
  void OnRetry() { retries_->Inc(); }
  void OnResume() { resumes_->Inc(); }
  void OnSessionMove() { session_moves_->Inc(); }
  void OnPrefix(size_t matched_blocks, size_t num_blocks);
  void ObserveAddedLatency(double seconds) { added_latency_->Observe(seconds); }
  void OnClientError() { client_errors_->Inc(); }
  std::string Render(const std::vector<WorkerView>& workers);

  double retries() const { return retries_->value(); }
  double resumes() const { return resumes_->value(); }
  double session_moves() const { return session_moves_->value(); }

 private:
  struct WorkerSeries {
    metrics::Counter* requests = nullptr;
    metrics::Counter* errors = nullptr;
    metrics::Gauge* inflight = nullptr;
    metrics::Gauge* healthy = nullptr;
  };
  WorkerSeries& SeriesFor(const std::string& worker);

  std::string policy_;
  metrics::MetricsRegistry registry_;
  metrics::Counter* retries_;
  metrics::Counter* resumes_;
  metrics::Counter* session_moves_;
  metrics::Counter* client_errors_;
  metrics::Counter* prefix_matched_;
  metrics::Counter* prefix_queried_;
  metrics::Gauge* prefix_hit_rate_;
  metrics::Histogram* added_latency_;
  std::mutex mu_;
  std::map<std::string, WorkerSeries> workers_;
  std::map<std::pair<std::string, std::string>, metrics::Counter*> decisions_;
};

}  // namespace pagellm::router
