#include "metrics/metrics_registry.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "common/status.h"

namespace pagellm::metrics {

void Counter::SetCumulative(double total) {
  double current = value_.load(std::memory_order_relaxed);
  while (total > current && !value_.compare_exchange_weak(current, total, std::memory_order_relaxed)) {
  }
}

Histogram::Histogram(std::vector<double> upper_bounds) : upper_bounds_(std::move(upper_bounds)) {
  for (size_t i = 1; i < upper_bounds_.size(); ++i) PAGELLM_CHECK(upper_bounds_[i] > upper_bounds_[i - 1]);
  counts_.assign(upper_bounds_.size() + 1, 0);
}

void Histogram::Observe(double value) {
  // First bucket whose upper bound is >= value (Prometheus buckets are "le").
  size_t idx = static_cast<size_t>(std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), value) -
                                   upper_bounds_.begin());
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[idx];
  sum_ += value;
}

void Histogram::AddToBucket(size_t bucket_idx, int64_t count, double sum) {
  PAGELLM_CHECK(bucket_idx < counts_.size());
  std::lock_guard<std::mutex> lock(mu_);
  counts_[bucket_idx] += count;
  sum_ += sum;
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  std::lock_guard<std::mutex> lock(mu_);
  s.cumulative_counts.resize(counts_.size());
  int64_t running = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    running += counts_[i];
    s.cumulative_counts[i] = running;
  }
  s.sum = sum_;
  return s;
}

MetricsRegistry::Family& MetricsRegistry::FamilyFor(const std::string& name, const std::string& help, Kind kind) {
  for (auto& f : families_) {
    if (f->name == name) {
      PAGELLM_CHECK(f->kind == kind);
      return *f;
    }
  }
  families_.push_back(std::make_unique<Family>(Family{name, help, kind, {}}));
  return *families_.back();
}

Counter* MetricsRegistry::AddCounter(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  Family& f = FamilyFor(name, help, Kind::kCounter);
  f.series.push_back({labels, std::make_unique<Counter>(), nullptr, nullptr});
  return f.series.back().counter.get();
}

Gauge* MetricsRegistry::AddGauge(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  Family& f = FamilyFor(name, help, Kind::kGauge);
  f.series.push_back({labels, nullptr, std::make_unique<Gauge>(), nullptr});
  return f.series.back().gauge.get();
}

Histogram* MetricsRegistry::AddHistogram(const std::string& name, const std::string& help, const Labels& labels,
                                         std::vector<double> upper_bounds) {
  std::lock_guard<std::mutex> lock(mu_);
  Family& f = FamilyFor(name, help, Kind::kHistogram);
  f.series.push_back({labels, nullptr, nullptr, std::make_unique<Histogram>(std::move(upper_bounds))});
  return f.series.back().histogram.get();
}

std::string FormatMetricValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", value);
}

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

namespace {

// `{a="x",b="y"}` with `extra` (e.g. le) appended; "" when there are no labels.
std::string LabelText(const Labels& labels, const std::string& extra_name = "", const std::string& extra_value = "") {
  std::string out;
  auto add = [&](const std::string& k, const std::string& v) {
    out += out.empty() ? "{" : ",";
    out += fmt::format("{}=\"{}\"", k, EscapeLabelValue(v));
  };
  for (const auto& [k, v] : labels) add(k, v);
  if (!extra_name.empty()) add(extra_name, extra_value);
  if (!out.empty()) out += "}";
  return out;
}

std::string EscapeHelp(const std::string& help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

void RenderHistogram(const std::string& name, const Labels& labels, const Histogram& h, std::string* out) {
  Histogram::Snapshot s = h.snapshot();
  const std::vector<double>& bounds = h.upper_bounds();
  for (size_t i = 0; i <= bounds.size(); ++i) {
    std::string le = i < bounds.size() ? FormatMetricValue(bounds[i]) : "+Inf";
    *out += fmt::format("{}_bucket{} {}\n", name, LabelText(labels, "le", le), s.cumulative_counts[i]);
  }
  *out += fmt::format("{}_sum{} {}\n", name, LabelText(labels), FormatMetricValue(s.sum));
  *out += fmt::format("{}_count{} {}\n", name, LabelText(labels), s.cumulative_counts.back());
}

}  // namespace

std::string MetricsRegistry::Render() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& f : families_) {
    const char* type = f->kind == Kind::kCounter ? "counter" : f->kind == Kind::kGauge ? "gauge" : "histogram";
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", f->name, EscapeHelp(f->help), f->name, type);
    for (const Series& s : f->series) {
      if (s.counter) out += fmt::format("{}{} {}\n", f->name, LabelText(s.labels), FormatMetricValue(s.counter->value()));
      if (s.gauge) out += fmt::format("{}{} {}\n", f->name, LabelText(s.labels), FormatMetricValue(s.gauge->value()));
      if (s.histogram) RenderHistogram(f->name, s.labels, *s.histogram, &out);
    }
  }
  return out;
}

std::vector<double> TtftBuckets() {
  return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
          1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
}

std::vector<double> InterTokenLatencyBuckets() {
  return {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0};
}

std::vector<double> RequestLatencyBuckets() {
  return {0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0,
          1920.0, 7680.0};
}

std::vector<double> IterationTokensBuckets() {
  std::vector<double> b = {1.0};
  for (int p = 3; p <= 14; ++p) b.push_back(static_cast<double>(1 << p));
  return b;
}

}  // namespace pagellm::metrics
