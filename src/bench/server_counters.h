// The server-side cache counters a benchmark reports: scrapes a Prometheus /metrics page
// before and after a run and turns the two into the run's prefix-cache hit rate
// (vllm:prefix_cache_hits_total / vllm:prefix_cache_queries_total, both in tokens) and
// the deltas of pagellm's hybrid-state counters (pagellm:hybrid_state_*: GDN state
// snapshot hits, restored tokens, saves, evictions; snapshot and slot gauges).
//
//   PAGELLM_ASSIGN_OR_RETURN(std::string before, FetchHttpText(target, "/metrics"));
//   ... run ...
//   PAGELLM_ASSIGN_OR_RETURN(std::string after, FetchHttpText(target, "/metrics"));
//   CacheCounterDelta d = DiffCacheCounters(ParsePrometheusText(before), ParsePrometheusText(after));
//   // d.prefix_hits / d.prefix_queries, d.hit_rate (nullopt when nothing was queried)
//
// Counters are summed over their label sets (one server may label several models), so
// the figures are the whole server's: other clients during the run distort them.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "net/http_client.h"
#include "common/status.h"
#include "metrics/prometheus_text.h"

namespace pagellm::bench {

// The parser lives in metrics/ (the router reads its workers' /metrics too).
using metrics::ParsePrometheusText;
using metrics::PrometheusSamples;
using net::HttpTarget;

// Prefix used to pick the hybrid-state (GDN snapshot and slot) metrics out of a scrape.
inline constexpr std::string_view kHybridStateMetricPrefix = "pagellm:hybrid_state_";

struct CacheCounterDelta {
  bool prefix_counters_found = false;  // both vllm:prefix_cache_* counters were exposed
  double prefix_queries = 0.0;         // tokens looked up during the run
  double prefix_hits = 0.0;            // tokens found cached during the run
  std::optional<double> hit_rate;      // hits / queries; nullopt when queries == 0
  // pagellm:hybrid_state_* metrics: counters (*_total) as run deltas, gauges
  // as their value after the run. Empty when the server exposes none.
  std::map<std::string, double> hybrid_state;
};

CacheCounterDelta DiffCacheCounters(const PrometheusSamples& before, const PrometheusSamples& after);

// GET `path` (prefix included) from the target; the body of a 200 response.
StatusOr<std::string> FetchHttpText(const HttpTarget& target, const std::string& path);

}  // namespace pagellm::bench
