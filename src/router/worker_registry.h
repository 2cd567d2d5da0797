// WorkerRegistry: the router's workers (pagellm serve or any vLLM-compatible server),
// their health, the load the router itself put on them, and the load they last
// reported on /metrics. Thread-safe; workers are named by their normalized base URL.
//
//   WorkerRegistry reg;
//   PAGELLM_RETURN_IF_ERROR(reg.Add("http://127.0.0.1:8001"));   // not routable yet
//   reg.SetHealth(url, WorkerHealth::kReady);                     // after a real probe
//   std::vector<WorkerView> views = reg.Snapshot(now_s);          // routing input
//   reg.OnRequestStart(url, est_tokens); ... reg.OnRequestEnd(url, est_tokens);
//
// Health: a new worker is kProbing until a 1-token generation succeeds; a failing one
// is kFailed (no traffic, probed until it answers again); kDraining gets no new
// requests and keeps its running ones. A removed worker's running requests finish on
// the endpoints they already hold.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "net/http_client.h"

namespace pagellm::router {

enum class WorkerHealth { kProbing, kReady, kFailed, kDraining };
const char* WorkerHealthName(WorkerHealth h);

struct WorkerView {
  std::string url;
  net::HttpTarget target;
  net::Endpoints endpoints;
  WorkerHealth health = WorkerHealth::kProbing;
  int64_t num_inflight_requests = 0;  // counted by the router (exact, no lag)
  int64_t num_inflight_tokens = 0;    // estimated prompt + max tokens of those
  // Last /metrics scrape; when older than the staleness bound the worker counts as
  // saturated (kv_usage 1, scraped queue huge) rather than idle.
  double kv_usage = 1.0;              // vllm:kv_cache_usage_perc
  double num_waiting = 0.0;           // vllm:num_requests_waiting
  bool metrics_fresh = false;
  int64_t num_requests = 0;           // routed here since added
  bool from_file = false;             // added by --worker-file (removed when it leaves)
  bool routable() const { return health == WorkerHealth::kReady; }
};

class WorkerRegistry {
 public:
  explicit WorkerRegistry(double metrics_stale_s = 2.0) : metrics_stale_s_(metrics_stale_s) {}

  // "http://HOST:PORT" (trailing slash allowed). Resolves the host once.
  Status Add(const std::string& url, bool from_file = false);
  Status Remove(const std::string& url);
  Status Drain(const std::string& url);
  void SetHealth(const std::string& url, WorkerHealth health);
  // Copies of every worker, metrics freshness evaluated at `now_s`.
  std::vector<WorkerView> Snapshot(double now_s) const;
  std::optional<WorkerView> Find(const std::string& url, double now_s) const;

  void OnRequestStart(const std::string& url, int64_t est_tokens);
  void OnRequestEnd(const std::string& url, int64_t est_tokens);
  void OnMetrics(const std::string& url, double kv_usage, double num_waiting, double now_s);

  static StatusOr<std::string> NormalizeUrl(const std::string& url);

 private:
  struct Entry {
    WorkerView view;
    double metrics_at_s = -1e18;
  };
  double metrics_stale_s_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> workers_;
};

}  // namespace pagellm::router
