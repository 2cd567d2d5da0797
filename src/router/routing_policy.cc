#include "router/routing_policy.h"

#include <algorithm>

#include <fmt/format.h>

namespace pagellm::router {

StatusOr<PolicyKind> ParsePolicyKind(const std::string& name) {
  if (name == "round_robin") return PolicyKind::kRoundRobin;
  if (name == "least_kv") return PolicyKind::kLeastKv;
  if (name == "cache_aware") return PolicyKind::kCacheAware;
  if (name == "default") return PolicyKind::kDefault;
  return InvalidArgumentError(
      fmt::format("--policy {}: expected round_robin, least_kv, cache_aware or default", name));
}

const char* PolicyName(PolicyKind kind) {
  switch (kind) {
    case PolicyKind::kRoundRobin: return "round_robin";
    case PolicyKind::kLeastKv: return "least_kv";
    case PolicyKind::kCacheAware: return "cache_aware";
    case PolicyKind::kDefault: return "default";
  }
  return "unknown";
}

RouteChoice RoutingPolicy::Pick(const std::vector<Candidate>& candidates, size_t num_blocks) {
  switch (kind_) {
    case PolicyKind::kRoundRobin: return {NextRoundRobin(candidates.size()), "round_robin"};
    case PolicyKind::kLeastKv: return PickLeastKv(candidates);
    case PolicyKind::kCacheAware: return PickCacheAware(candidates, num_blocks);
    case PolicyKind::kDefault: return PickWeighted(candidates, num_blocks);
  }
  return {0, "none"};
}

size_t RoutingPolicy::LeastLoaded(const std::vector<Candidate>& c) {
  size_t start = NextRoundRobin(c.size());
  size_t best = start;
  for (size_t k = 1; k < c.size(); ++k) {
    size_t i = (start + k) % c.size();
    if (c[i].num_inflight_requests < c[best].num_inflight_requests) best = i;
  }
  return best;
}

RouteChoice RoutingPolicy::PickLeastKv(const std::vector<Candidate>& c) {
  size_t start = NextRoundRobin(c.size());
  size_t best = start;
  for (size_t k = 1; k < c.size(); ++k) {
    size_t i = (start + k) % c.size();
    bool lower = c[i].kv_usage < c[best].kv_usage;
    bool tie = c[i].kv_usage == c[best].kv_usage && c[i].num_inflight_requests < c[best].num_inflight_requests;
    if (lower || tie) best = i;
  }
  return {best, "kv"};
}

RouteChoice RoutingPolicy::PickCacheAware(const std::vector<Candidate>& c, size_t num_blocks) {
  auto [lo, hi] = std::minmax_element(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) {
    return a.num_inflight_requests < b.num_inflight_requests;
  });
  int64_t min_load = lo->num_inflight_requests, max_load = hi->num_inflight_requests;
  bool imbalanced = max_load - min_load > options_.balance_abs &&
                    static_cast<double>(max_load) > static_cast<double>(min_load) * options_.balance_rel;
  if (imbalanced) return {LeastLoaded(c), "load"};
  size_t best = 0;
  for (size_t i = 1; i < c.size(); ++i) {
    if (c[i].matched_blocks > c[best].matched_blocks) best = i;
  }
  double ratio = num_blocks == 0 ? 0.0 : static_cast<double>(c[best].matched_blocks) / static_cast<double>(num_blocks);
  if (ratio > options_.cache_threshold) return {best, "prefix"};
  return {LeastLoaded(c), "load"};
}

RouteChoice RoutingPolicy::PickWeighted(const std::vector<Candidate>& c, size_t num_blocks) {
  auto queue = [](const Candidate& x) { return static_cast<double>(x.num_inflight_requests) + x.num_waiting; };
  double qmin = queue(c[0]), qmax = queue(c[0]);
  for (const Candidate& x : c) {
    qmin = std::min(qmin, queue(x));
    qmax = std::max(qmax, queue(x));
  }
  size_t start = NextRoundRobin(c.size());
  size_t best = start;
  double best_score = -1.0;
  bool best_by_prefix = false;
  for (size_t k = 0; k < c.size(); ++k) {
    size_t i = (start + k) % c.size();
    double prefix = num_blocks == 0 ? 0.0 : static_cast<double>(c[i].matched_blocks) / static_cast<double>(num_blocks);
    double q = qmax > qmin ? (qmax - queue(c[i])) / (qmax - qmin) : 1.0;
    double kv = 1.0 - std::clamp(c[i].kv_usage, 0.0, 1.0);
    double score = 3.0 * prefix + q + kv;
    if (score > best_score) {
      best_score = score;
      best = i;
      best_by_prefix = prefix > 0.0;
    }
  }
  return {best, best_by_prefix ? "prefix" : "load"};
}

}  // namespace pagellm::router
