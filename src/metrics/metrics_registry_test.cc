#include "metrics/metrics_registry.h"

#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace pagellm::metrics {
namespace {

bool Contains(const std::string& text, const std::string& line) { return text.find(line) != std::string::npos; }

TEST(MetricsRegistryTest, CounterAndGaugeRenderWithLabels) {
  MetricsRegistry reg;
  Counter* c = reg.AddCounter("vllm:prompt_tokens_total", "Number of prefill tokens processed.", {{"model_name", "m"}});
  Gauge* g = reg.AddGauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", {{"model_name", "m"}});
  c->Inc(3);
  c->Inc(4);
  g->Set(0.25);
  std::string text = reg.Render();
  EXPECT_TRUE(Contains(text, "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.\n"));
  EXPECT_TRUE(Contains(text, "# TYPE vllm:prompt_tokens_total counter\n"));
  EXPECT_TRUE(Contains(text, "vllm:prompt_tokens_total{model_name=\"m\"} 7\n"));
  EXPECT_TRUE(Contains(text, "# TYPE vllm:kv_cache_usage_perc gauge\n"));
  EXPECT_TRUE(Contains(text, "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.25\n"));
}

TEST(MetricsRegistryTest, SeriesOfOneFamilyShareHelp) {
  MetricsRegistry reg;
  reg.AddCounter("vllm:request_success_total", "Finished requests.", {{"model_name", "m"}, {"finished_reason", "stop"}})
      ->Inc();
  reg.AddCounter("vllm:request_success_total", "Finished requests.", {{"model_name", "m"}, {"finished_reason", "length"}});
  std::string text = reg.Render();
  size_t first = text.find("# TYPE vllm:request_success_total");
  ASSERT_NE(first, std::string::npos);
  EXPECT_EQ(text.find("# TYPE vllm:request_success_total", first + 1), std::string::npos);
  EXPECT_TRUE(Contains(text, "vllm:request_success_total{model_name=\"m\",finished_reason=\"stop\"} 1\n"));
  EXPECT_TRUE(Contains(text, "vllm:request_success_total{model_name=\"m\",finished_reason=\"length\"} 0\n"));
}

TEST(MetricsRegistryTest, HistogramBucketsAreCumulativeAndInclusive) {
  MetricsRegistry reg;
  Histogram* h = reg.AddHistogram("lat_seconds", "Latency.", {}, {0.1, 1.0});
  h->Observe(0.1);  // le="0.1" is inclusive
  h->Observe(0.5);
  h->Observe(7.0);
  std::string text = reg.Render();
  EXPECT_TRUE(Contains(text, "lat_seconds_bucket{le=\"0.1\"} 1\n"));
  EXPECT_TRUE(Contains(text, "lat_seconds_bucket{le=\"1\"} 2\n"));
  EXPECT_TRUE(Contains(text, "lat_seconds_bucket{le=\"+Inf\"} 3\n"));
  EXPECT_TRUE(Contains(text, "lat_seconds_sum 7.6\n"));
  EXPECT_TRUE(Contains(text, "lat_seconds_count 3\n"));
}

TEST(MetricsRegistryTest, AddToBucketAndCumulativeCounter) {
  Histogram h({1.0, 8.0});
  h.AddToBucket(1, 2, 10.0);
  h.AddToBucket(2, 1, 100.0);
  Histogram::Snapshot s = h.snapshot();
  EXPECT_EQ(s.cumulative_counts, (std::vector<int64_t>{0, 2, 3}));
  EXPECT_DOUBLE_EQ(s.sum, 110.0);
  Counter c;
  c.SetCumulative(5);
  c.SetCumulative(3);  // never goes back
  EXPECT_DOUBLE_EQ(c.value(), 5.0);
}

TEST(MetricsRegistryTest, EscapesLabelValues) {
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  EXPECT_EQ(FormatMetricValue(1.0 / 0.0), "+Inf");
}

TEST(MetricsRegistryTest, VllmBucketLayouts) {
  EXPECT_EQ(TtftBuckets().size(), 22u);
  EXPECT_EQ(InterTokenLatencyBuckets().size(), 19u);
  EXPECT_EQ(RequestLatencyBuckets().size(), 21u);
  std::vector<double> it = IterationTokensBuckets();
  ASSERT_EQ(it.size(), 13u);
  EXPECT_EQ(it[0], 1.0);
  EXPECT_EQ(it[1], 8.0);
  EXPECT_EQ(it.back(), 16384.0);
}

TEST(MetricsRegistryTest, ConcurrentIncrementsAreNotLost) {
  MetricsRegistry reg;
  Counter* c = reg.AddCounter("x_total", "x", {});
  Histogram* h = reg.AddHistogram("y", "y", {}, {1.0});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c->Inc();
        h->Observe(0.5);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_DOUBLE_EQ(c->value(), 40000.0);
  EXPECT_EQ(h->snapshot().cumulative_counts.back(), 40000);
}

}  // namespace
}  // namespace pagellm::metrics
