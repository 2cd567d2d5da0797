// Reading the Prometheus text exposition format (what /metrics serves): the bench's
// before/after counter deltas and the router's scrapes of its workers.
//
//   PrometheusSamples s = ParsePrometheusText(body);
//   double kv = s["vllm:kv_cache_usage_perc"];   // summed over label sets
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace pagellm::metrics {

// Metric name -> sum of its samples' values over all label sets. Comment lines and
// malformed lines are skipped; histogram series appear under their own names
// (name_bucket, name_sum, name_count).
using PrometheusSamples = std::map<std::string, double>;
PrometheusSamples ParsePrometheusText(std::string_view text);

// Calls fn(name, labels, value) for every sample line; `labels` is the text between the
// braces ("" when there are none). What ParsePrometheusText sums, one line at a time
// (histogram readers need the `le` label of each bucket).
void ForEachPrometheusSample(std::string_view text,
                             const std::function<void(std::string_view name, std::string_view labels, double value)>& fn);

}  // namespace pagellm::metrics
