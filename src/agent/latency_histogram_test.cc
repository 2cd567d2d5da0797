#include "agent/latency_histogram.h"

#include <cmath>

#include <gtest/gtest.h>

namespace pagellm::agent {
namespace {

std::string Page(double b1, double b2, double inf) {
  return "# TYPE vllm:time_to_first_token_seconds histogram\n"
         "vllm:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"0.1\"} " + std::to_string(b1) + "\n"
         "vllm:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"0.2\"} " + std::to_string(b2) + "\n"
         "vllm:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"+Inf\"} " + std::to_string(inf) + "\n"
         "vllm:time_to_first_token_seconds_count{model_name=\"m\"} " + std::to_string(inf) + "\n";
}

TEST(LatencyHistogramTest, WindowsAndInterpolatedQuantiles) {
  const std::string name = "vllm:time_to_first_token_seconds";
  LatencyHistogram t0 = LatencyHistogram::Parse(Page(10, 10, 10), name);
  LatencyHistogram t1 = LatencyHistogram::Parse(Page(60, 110, 110), name);
  LatencyHistogram w = t1.Minus(t0);  // 50 requests <= 0.1 s, 50 in (0.1, 0.2]
  EXPECT_DOUBLE_EQ(w.count(), 100);
  EXPECT_NEAR(w.Quantile(0.5), 0.1, 1e-12);
  EXPECT_NEAR(w.Quantile(0.99), 0.1 + 0.1 * 49.0 / 50.0, 1e-12);
  LatencyHistogram both = w;
  both.Add(w);  // two workers
  EXPECT_DOUBLE_EQ(both.count(), 200);
  EXPECT_NEAR(both.Quantile(0.99), w.Quantile(0.99), 1e-12);
  EXPECT_TRUE(std::isnan(t0.Minus(t0).Quantile(0.99)));
  EXPECT_DOUBLE_EQ(LatencyHistogram::Parse(Page(0, 0, 5), name).Quantile(0.99), 0.2);  // beyond the last bound
}

}  // namespace
}  // namespace pagellm::agent
