// MetricsRegistry: counters, gauges and histograms with constant labels, rendered in
// the Prometheus text exposition format (version 0.0.4), as vLLM's /metrics serves it.
//
//   MetricsRegistry reg;
//   Labels model = {{"model_name", "qwen3"}};
//   Counter* prompt = reg.AddCounter("vllm:prompt_tokens_total", "Prompt tokens.", model);
//   Histogram* ttft = reg.AddHistogram("vllm:time_to_first_token_seconds", "TTFT.", model,
//                                      {0.001, 0.005, 0.01});
//   prompt->Inc(12);
//   ttft->Observe(0.004);
//   std::string body = reg.Render();  // "# HELP vllm:prompt_tokens_total ..."
//
// Counters are named with their `_total` suffix (the family name in HELP/TYPE keeps it,
// as prometheus_client does). Several series of one family (different label values)
// share one HELP/TYPE block. Instruments are owned by the registry and live as long as
// it; updating them is thread-safe and lock-free for counters and gauges.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace pagellm::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  void Inc(double amount = 1.0) { value_.fetch_add(amount, std::memory_order_relaxed); }
  // For counters mirrored from a cumulative source (e.g. EngineStats): never decreases.
  void SetCumulative(double total);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Gauge {
 public:
  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Add(double amount) { value_.fetch_add(amount, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Histogram {
 public:
  // `upper_bounds`: strictly increasing finite bucket bounds; +Inf is implicit.
  explicit Histogram(std::vector<double> upper_bounds);
  void Observe(double value);
  // Adds `count` observations whose sum is `sum` to the bucket of upper bound index
  // `bucket_idx` (upper_bounds().size() means +Inf). For sources that pre-bucket.
  void AddToBucket(size_t bucket_idx, int64_t count, double sum);

  struct Snapshot {
    std::vector<int64_t> cumulative_counts;  // [num_bounds + 1], last one = count
    double sum = 0.0;
  };
  Snapshot snapshot() const;
  const std::vector<double>& upper_bounds() const { return upper_bounds_; }

 private:
  std::vector<double> upper_bounds_;
  mutable std::mutex mu_;
  std::vector<int64_t> counts_;  // [num_bounds + 1], per bucket (not cumulative)
  double sum_ = 0.0;
};

class MetricsRegistry {
 public:
  Counter* AddCounter(const std::string& name, const std::string& help, const Labels& labels);
  Gauge* AddGauge(const std::string& name, const std::string& help, const Labels& labels);
  Histogram* AddHistogram(const std::string& name, const std::string& help, const Labels& labels,
                          std::vector<double> upper_bounds);
  // The whole exposition, families in registration order.
  std::string Render() const;

 private:
  enum class Kind { kCounter, kGauge, kHistogram };
  struct Series {
    Labels labels;
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Gauge> gauge;
    std::unique_ptr<Histogram> histogram;
  };
  struct Family {
    std::string name, help;
    Kind kind;
    std::vector<Series> series;
  };
  Family& FamilyFor(const std::string& name, const std::string& help, Kind kind);

  mutable std::mutex mu_;  // guards the family list (instruments lock themselves)
  std::vector<std::unique_ptr<Family>> families_;
};

// Prometheus float formatting: shortest round-trip text, "+Inf"/"-Inf"/"NaN".
std::string FormatMetricValue(double value);
// Escapes a label value (backslash, double quote, newline).
std::string EscapeLabelValue(const std::string& value);

// vLLM's bucket layouts (vllm/v1/metrics): seconds unless noted.
std::vector<double> TtftBuckets();               // time_to_first_token_seconds
std::vector<double> InterTokenLatencyBuckets();  // inter_token_latency_seconds
std::vector<double> RequestLatencyBuckets();     // e2e / queue / prefill / decode / inference
std::vector<double> IterationTokensBuckets();    // 1, 8, 16, ..., 16384 (tokens)

}  // namespace pagellm::metrics
