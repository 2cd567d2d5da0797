#include "metrics/prometheus_text.h"

#include <gtest/gtest.h>

#include "metrics/metrics_registry.h"

namespace pagellm::metrics {
namespace {

TEST(PrometheusTextTest, ReadsWhatTheRegistryRenders) {
  MetricsRegistry reg;
  reg.AddGauge("vllm:kv_cache_usage_perc", "KV.", {{"model_name", "a \"b\" {c}"}})->Set(0.25);
  reg.AddCounter("vllm:prompt_tokens_total", "P.", {{"model_name", "a"}})->Inc(5);
  reg.AddCounter("vllm:prompt_tokens_total", "P.", {{"model_name", "b"}})->Inc(7);
  reg.AddHistogram("x_seconds", "H.", {}, {0.1})->Observe(0.05);
  PrometheusSamples s = ParsePrometheusText(reg.Render() + "no value here\n");
  EXPECT_DOUBLE_EQ(s.at("vllm:kv_cache_usage_perc"), 0.25);
  EXPECT_DOUBLE_EQ(s.at("vllm:prompt_tokens_total"), 12.0);
  EXPECT_DOUBLE_EQ(s.at("x_seconds_count"), 1.0);
  EXPECT_EQ(s.count("no"), 0u);
}

}  // namespace
}  // namespace pagellm::metrics
