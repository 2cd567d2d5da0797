#include "bench/stats.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace pagellm::bench {

double Mean(std::span<const double> values) {
  if (values.empty()) return 0.0;
  double sum = 0.0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

double StdDev(std::span<const double> values) {
  if (values.empty()) return 0.0;
  const double mean = Mean(values);
  double sum_sq = 0.0;
  for (double v : values) sum_sq += (v - mean) * (v - mean);
  return std::sqrt(sum_sq / static_cast<double>(values.size()));
}

double Percentile(std::span<const double> values, double q) {
  if (values.empty()) return 0.0;
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  const double index = std::clamp(q, 0.0, 100.0) / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(index));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double t = index - static_cast<double>(lo);
  const double a = sorted[lo], b = sorted[hi];
  // numpy's _lerp: interpolate from the nearer end so t == 1 returns b exactly.
  const double diff = b - a;
  return t >= 0.5 ? b - diff * (1.0 - t) : a + diff * t;
}

double Median(std::span<const double> values) { return Percentile(values, 50.0); }

}  // namespace pagellm::bench
