// HealthChecker: a background thread that keeps the registry's view of every worker
// current: scrapes /metrics (vllm:kv_cache_usage_perc, vllm:num_requests_waiting) each
// round, and decides readiness by a real 1-token generation, not /health (engines have
// died while /health said 200): a new or failed worker becomes ready only when one
// succeeds, and ready workers repeat it every `generate_every` rounds. A ready worker
// whose scrape or generation fails is taken out. It also re-reads the worker file.
//
//   HealthChecker checker(registry, {.interval = 500ms, .worker_file = "workers.txt"});
//   checker.Start();  ...  checker.Stop();
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "router/worker_registry.h"

namespace pagellm::router {

struct HealthCheckerOptions {
  std::chrono::milliseconds interval{500};
  std::chrono::milliseconds timeout{3000};  // per probe
  int generate_every = 10;                  // rounds between generation probes of ready workers
  std::string worker_file;                  // "" = none
};

class HealthChecker {
 public:
  HealthChecker(WorkerRegistry& registry, HealthCheckerOptions options) : registry_(registry), options_(options) {}
  ~HealthChecker() { Stop(); }
  void Start();
  void Stop();
  // One round, synchronously (tests; the thread calls it every interval).
  void RunRound();

 private:
  void Loop();
  void SyncWorkerFile();

  WorkerRegistry& registry_;
  HealthCheckerOptions options_;
  int64_t round_ = 0;
  std::string file_state_;  // the worker file's last contents
  std::map<std::string, std::string> not_ready_reason_;  // url -> last probe failure logged
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace pagellm::router
