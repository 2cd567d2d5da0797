#include "agent/latency_histogram.h"

#include "metrics/prometheus_text.h"

#include <cmath>
#include <cstdlib>
#include <limits>

namespace pagellm::agent {

LatencyHistogram LatencyHistogram::Parse(std::string_view text, const std::string& name) {
  LatencyHistogram h;
  const std::string bucket = name + "_bucket";
  metrics::ForEachPrometheusSample(text, [&](std::string_view series, std::string_view labels, double value) {
    if (series != bucket) return;
    const size_t le = labels.find("le=\"");
    if (le == std::string_view::npos) return;
    const size_t le_end = labels.find('"', le + 4);
    const std::string bound(labels.substr(le + 4, le_end - le - 4));
    const double upper = bound == "+Inf" ? std::numeric_limits<double>::infinity() : std::strtod(bound.c_str(), nullptr);
    h.cumulative_[upper] += value;
  });
  return h;
}

LatencyHistogram LatencyHistogram::Minus(const LatencyHistogram& earlier) const {
  LatencyHistogram d = *this;
  for (auto& [le, c] : d.cumulative_) {
    auto it = earlier.cumulative_.find(le);
    if (it != earlier.cumulative_.end()) c -= it->second;
  }
  return d;
}

void LatencyHistogram::Add(const LatencyHistogram& other) {
  for (const auto& [le, c] : other.cumulative_) cumulative_[le] += c;
}

double LatencyHistogram::count() const { return cumulative_.empty() ? 0.0 : cumulative_.rbegin()->second; }

double LatencyHistogram::Quantile(double q) const {
  const double total = count();
  if (total <= 0) return std::nan("");
  const double rank = q * total;
  double lower = 0.0, below = 0.0;
  for (const auto& [le, c] : cumulative_) {
    if (c >= rank) {
      if (std::isinf(le)) return lower;  // beyond the last finite bound: report it
      return lower + (le - lower) * (c - below > 0 ? (rank - below) / (c - below) : 1.0);
    }
    lower = le;
    below = c;
  }
  return lower;
}

}  // namespace pagellm::agent
