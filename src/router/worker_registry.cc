#include "router/worker_registry.h"

#include <fmt/format.h>

namespace pagellm::router {

const char* WorkerHealthName(WorkerHealth h) {
  switch (h) {
    case WorkerHealth::kProbing: return "probing";
    case WorkerHealth::kReady: return "ready";
    case WorkerHealth::kFailed: return "failed";
    case WorkerHealth::kDraining: return "draining";
  }
  return "unknown";
}

StatusOr<std::string> WorkerRegistry::NormalizeUrl(const std::string& url) {
  PAGELLM_ASSIGN_OR_RETURN(net::HttpTarget t, net::ParseBaseUrl(url));
  if (!t.path_prefix.empty()) return InvalidArgumentError(fmt::format("worker {}: a worker URL has no path", url));
  return "http://" + t.HostHeader();
}

Status WorkerRegistry::Add(const std::string& url, bool from_file) {
  PAGELLM_ASSIGN_OR_RETURN(std::string name, NormalizeUrl(url));
  PAGELLM_ASSIGN_OR_RETURN(net::HttpTarget target, net::ParseBaseUrl(name));
  PAGELLM_ASSIGN_OR_RETURN(net::Endpoints endpoints, net::ResolveTarget(target));
  std::lock_guard<std::mutex> lock(mu_);
  if (workers_.count(name) > 0) return AlreadyExistsError(fmt::format("worker {} is already registered", name));
  Entry& e = workers_[name];
  e.view.url = name;
  e.view.target = target;
  e.view.endpoints = endpoints;
  e.view.from_file = from_file;
  return OkStatus();
}

Status WorkerRegistry::Remove(const std::string& url) {
  PAGELLM_ASSIGN_OR_RETURN(std::string name, NormalizeUrl(url));
  std::lock_guard<std::mutex> lock(mu_);
  if (workers_.erase(name) == 0) return NotFoundError(fmt::format("worker {} is not registered", name));
  return OkStatus();
}

Status WorkerRegistry::Drain(const std::string& url) {
  PAGELLM_ASSIGN_OR_RETURN(std::string name, NormalizeUrl(url));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = workers_.find(name);
  if (it == workers_.end()) return NotFoundError(fmt::format("worker {} is not registered", name));
  it->second.view.health = WorkerHealth::kDraining;
  return OkStatus();
}

void WorkerRegistry::SetHealth(const std::string& url, WorkerHealth health) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = workers_.find(url);
  // Draining is an operator's decision: health probes do not undo it.
  if (it == workers_.end() || it->second.view.health == WorkerHealth::kDraining) return;
  it->second.view.health = health;
}

std::vector<WorkerView> WorkerRegistry::Snapshot(double now_s) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<WorkerView> out;
  out.reserve(workers_.size());
  for (const auto& [name, e] : workers_) {
    out.push_back(e.view);
    WorkerView& v = out.back();
    v.metrics_fresh = now_s - e.metrics_at_s <= metrics_stale_s_;
    if (!v.metrics_fresh) v.kv_usage = 1.0;  // stale: assume saturated
  }
  return out;
}

std::optional<WorkerView> WorkerRegistry::Find(const std::string& url, double now_s) const {
  for (WorkerView& v : Snapshot(now_s)) {
    if (v.url == url) return v;
  }
  return std::nullopt;
}

void WorkerRegistry::OnRequestStart(const std::string& url, int64_t est_tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = workers_.find(url);
  if (it == workers_.end()) return;
  ++it->second.view.num_inflight_requests;
  ++it->second.view.num_requests;
  it->second.view.num_inflight_tokens += est_tokens;
}

void WorkerRegistry::OnRequestEnd(const std::string& url, int64_t est_tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = workers_.find(url);
  if (it == workers_.end()) return;
  --it->second.view.num_inflight_requests;
  it->second.view.num_inflight_tokens -= est_tokens;
}

void WorkerRegistry::OnMetrics(const std::string& url, double kv_usage, double num_waiting, double now_s) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = workers_.find(url);
  if (it == workers_.end()) return;
  it->second.view.kv_usage = kv_usage;
  it->second.view.num_waiting = num_waiting;
  it->second.metrics_at_s = now_s;
}

}  // namespace pagellm::router
