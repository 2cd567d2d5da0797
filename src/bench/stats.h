// Summary statistics with numpy's exact conventions, so a pagellm benchmark result can be
// compared number for number with `vllm bench serve`'s (which calls numpy).
//
//   std::vector<double> ttfts_s = {...};
//   double p99 = Percentile(ttfts_s, 99.0);   // numpy.percentile(x, 99), method="linear"
//   double sd = StdDev(ttfts_s);              // numpy.std(x), ddof = 0
//
// An empty input gives 0 everywhere, as vLLM's `np.mean(x or 0)` does.
#pragma once

#include <span>

namespace pagellm::bench {

double Mean(std::span<const double> values);
// Population standard deviation (ddof = 0), numpy's default.
double StdDev(std::span<const double> values);
// `q` in [0, 100]. Linear interpolation between the two closest ranks of the sorted
// values (index q/100 * (n - 1)), with numpy's two-sided lerp for the last bit.
double Percentile(std::span<const double> values, double q);
double Median(std::span<const double> values);

}  // namespace pagellm::bench
