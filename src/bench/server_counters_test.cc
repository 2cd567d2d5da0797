#include "bench/server_counters.h"

#include <gtest/gtest.h>

namespace pagellm::bench {
namespace {

// Shaped like pagellm's and vLLM's /metrics: HELP/TYPE comments, a label set per model,
// a label value with spaces, braces and an escaped quote, histogram series, _created.
constexpr std::string_view kBefore = R"(# HELP vllm:prefix_cache_queries_total Prefix cache queries.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{model_name="a"} 1000
vllm:prefix_cache_queries_total{model_name="b {x} \"q\" y"} 24
vllm:prefix_cache_queries_created{model_name="a"} 1.7e9
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{model_name="a"} 300
vllm:prefix_cache_hits_total{model_name="b {x} \"q\" y"} 0
vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="a"} 3
vllm:time_to_first_token_seconds_sum{model_name="a"} 0.25
pagellm:hybrid_state_snapshot_hits_total{model_name="a"} 2
pagellm:hybrid_state_snapshots_in_use{model_name="a"} 5
garbage line without value
)";

constexpr std::string_view kAfter = "vllm:prefix_cache_queries_total{model_name=\"a\"} 1900\r\n"
                                    "vllm:prefix_cache_queries_total{model_name=\"b {x} \\\"q\\\" y\"} 124\r\n"
                                    "vllm:prefix_cache_hits_total{model_name=\"a\"} 750 1700000000000\r\n"
                                    "vllm:prefix_cache_hits_total{model_name=\"b {x} \\\"q\\\" y\"} 50\r\n"
                                    "pagellm:hybrid_state_snapshot_hits_total{model_name=\"a\"} 9\r\n"
                                    "pagellm:hybrid_state_snapshot_saves_total{model_name=\"a\"} 4\r\n"
                                    "pagellm:hybrid_state_snapshots_in_use{model_name=\"a\"} 7\r\n"
                                    "pagellm:hybrid_state_slots_capacity{model_name=\"a\"} 8\r\n"
                                    "pagellm:hybrid_state_snapshot_hits_created{model_name=\"a\"} 1.7e9\r\n";

TEST(ServerCountersTest, ParsesAndSumsOverLabelSets) {
  const PrometheusSamples s = ParsePrometheusText(kBefore);
  EXPECT_DOUBLE_EQ(s.at("vllm:prefix_cache_queries_total"), 1024.0);
  EXPECT_DOUBLE_EQ(s.at("vllm:prefix_cache_hits_total"), 300.0);
  EXPECT_DOUBLE_EQ(s.at("vllm:time_to_first_token_seconds_bucket"), 3.0);
  EXPECT_DOUBLE_EQ(s.at("vllm:time_to_first_token_seconds_sum"), 0.25);
  EXPECT_DOUBLE_EQ(s.at("vllm:prefix_cache_queries_created"), 1.7e9);
  EXPECT_EQ(s.count("garbage"), 0u);
  EXPECT_EQ(s.count("#"), 0u);
  // Timestamps after the value and CRLF line ends are tolerated.
  EXPECT_DOUBLE_EQ(ParsePrometheusText(kAfter).at("vllm:prefix_cache_hits_total"), 800.0);
}

TEST(ServerCountersTest, HitRateIsTheRunsDelta) {
  const CacheCounterDelta d = DiffCacheCounters(ParsePrometheusText(kBefore), ParsePrometheusText(kAfter));
  ASSERT_TRUE(d.prefix_counters_found);
  EXPECT_DOUBLE_EQ(d.prefix_queries, 1000.0);  // (1900 + 124) - (1000 + 24)
  EXPECT_DOUBLE_EQ(d.prefix_hits, 500.0);      // (750 + 50) - (300 + 0)
  ASSERT_TRUE(d.hit_rate.has_value());
  EXPECT_DOUBLE_EQ(*d.hit_rate, 0.5);
  // Counters as deltas (a counter first seen after the run counts from 0), gauges as
  // their value after the run, _created series left out.
  ASSERT_EQ(d.hybrid_state.size(), 4u);
  EXPECT_DOUBLE_EQ(d.hybrid_state.at("pagellm:hybrid_state_snapshot_hits_total"), 7.0);
  EXPECT_DOUBLE_EQ(d.hybrid_state.at("pagellm:hybrid_state_snapshot_saves_total"), 4.0);
  EXPECT_EQ(d.hybrid_state.count("pagellm:hybrid_state_snapshot_hits_created"), 0u);
  EXPECT_EQ(d.hybrid_state.count("pagellm:hybrid_state_snapshots_in_use"), 1u);
  EXPECT_DOUBLE_EQ(d.hybrid_state.at("pagellm:hybrid_state_snapshots_in_use"), 7.0);
  EXPECT_DOUBLE_EQ(d.hybrid_state.at("pagellm:hybrid_state_slots_capacity"), 8.0);
}

TEST(ServerCountersTest, NoQueriesMeansNoHitRate) {
  const PrometheusSamples same = ParsePrometheusText(kBefore);
  const CacheCounterDelta d = DiffCacheCounters(same, same);
  EXPECT_TRUE(d.prefix_counters_found);
  EXPECT_DOUBLE_EQ(d.prefix_queries, 0.0);
  EXPECT_FALSE(d.hit_rate.has_value());
}

TEST(ServerCountersTest, BareCounterNamesAndMissingCounters) {
  // Older servers expose counters without the _total suffix.
  const CacheCounterDelta bare = DiffCacheCounters(
      ParsePrometheusText("vllm:prefix_cache_queries 10\nvllm:prefix_cache_hits 0\n"),
      ParsePrometheusText("vllm:prefix_cache_queries 30\nvllm:prefix_cache_hits 5\n"));
  ASSERT_TRUE(bare.hit_rate.has_value());
  EXPECT_DOUBLE_EQ(*bare.hit_rate, 0.25);
  EXPECT_TRUE(bare.hybrid_state.empty());
  const CacheCounterDelta none = DiffCacheCounters(ParsePrometheusText("vllm:num_requests_running 1\n"),
                                                   ParsePrometheusText("vllm:num_requests_running 0\n"));
  EXPECT_FALSE(none.prefix_counters_found);
  EXPECT_FALSE(none.hit_rate.has_value());
}

}  // namespace
}  // namespace pagellm::bench
