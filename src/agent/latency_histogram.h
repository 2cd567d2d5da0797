// Latency percentiles from Prometheus histograms scraped from workers' /metrics
// (vllm:time_to_first_token_seconds, vllm:inter_token_latency_seconds): bucket counts
// summed over label sets and over workers, differenced between two scrapes to cover a
// window, and a quantile interpolated linearly inside its bucket (as Prometheus's
// histogram_quantile does).
//
//   LatencyHistogram a = LatencyHistogram::Parse(text_t0, "vllm:time_to_first_token_seconds");
//   LatencyHistogram b = LatencyHistogram::Parse(text_t1, ...);
//   double p99 = b.Minus(a).Quantile(0.99);   // NaN without observations
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace pagellm::agent {

class LatencyHistogram {
 public:
  static LatencyHistogram Parse(std::string_view prometheus_text, const std::string& name);
  LatencyHistogram Minus(const LatencyHistogram& earlier) const;
  void Add(const LatencyHistogram& other);
  double count() const;
  double Quantile(double q) const;

 private:
  std::map<double, double> cumulative_;  // upper bound (le; +inf last) -> cumulative count
};

}  // namespace pagellm::agent
