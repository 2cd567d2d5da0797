// Routing policies: which ready worker gets a request.
//
//   RoutingPolicy policy(PolicyKind::kCacheAware, {});
//   RouteChoice c = policy.Pick(candidates);   // candidates: routable workers only
//   // c.idx into candidates, c.reason "prefix" | "load" | "round_robin" | ...
//
// - round_robin: in turn.
// - least_kv: the lowest vllm:kv_cache_usage_perc (the watermark rule); ties by the
//   router's own in-flight count, which moves at once while scrapes lag and would
//   otherwise herd every request onto one worker between two scrapes.
// - cache_aware (SGLang's cache-aware router): if the load is imbalanced
//   (max - min > balance_abs and max > min * balance_rel, load = in-flight requests) go
//   to the least loaded; otherwise to the longest prefix match if it covers more than
//   cache_threshold of the prompt; otherwise to the least loaded (SGLang picked the
//   smallest tree there, which fed unique prompts to an overloaded worker: PR #14650).
// - default (llm-d's weighted scorer): 3 * prefix match + 1 * queue + 1 * KV, each
//   scored in [0, 1] (queue: (max - q) / (max - min) over the candidates; KV: 1 - usage).
// Workers with stale metrics arrive with kv_usage = 1 (saturated).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace pagellm::router {

enum class PolicyKind { kRoundRobin, kLeastKv, kCacheAware, kDefault };
StatusOr<PolicyKind> ParsePolicyKind(const std::string& name);
const char* PolicyName(PolicyKind kind);

struct CacheAwareOptions {
  double cache_threshold = 0.3;
  int64_t balance_abs = 8;
  double balance_rel = 1.5;
};

struct Candidate {
  int64_t num_inflight_requests = 0;
  double num_waiting = 0.0;  // scraped queue (0 when stale: the router's count rules)
  double kv_usage = 1.0;
  size_t matched_blocks = 0;  // prefix blocks this worker is believed to hold
};

struct RouteChoice {
  size_t idx = 0;
  const char* reason = "";
};

class RoutingPolicy {
 public:
  RoutingPolicy(PolicyKind kind, CacheAwareOptions options) : kind_(kind), options_(options) {}
  PolicyKind kind() const { return kind_; }
  bool uses_prefix() const { return kind_ == PolicyKind::kCacheAware || kind_ == PolicyKind::kDefault; }
  // Precondition: !candidates.empty(). `num_blocks`: blocks of the prompt.
  RouteChoice Pick(const std::vector<Candidate>& candidates, size_t num_blocks);

 private:
  size_t NextRoundRobin(size_t n) { return static_cast<size_t>(rr_.fetch_add(1)) % n; }
  RouteChoice PickLeastKv(const std::vector<Candidate>& c);
  RouteChoice PickCacheAware(const std::vector<Candidate>& c, size_t num_blocks);
  RouteChoice PickWeighted(const std::vector<Candidate>& c, size_t num_blocks);
  // Least in-flight; ties rotate so equal workers share the traffic.
  size_t LeastLoaded(const std::vector<Candidate>& c);

  PolicyKind kind_;
  CacheAwareOptions options_;
  std::atomic<uint64_t> rr_{0};
};

}  // namespace pagellm::router
