#include "bench/serving_metrics.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace pagellm::bench {
namespace {

// A request sent at `start`, first content chunk after `ttft`, then chunks `gaps` apart.
RequestOutput MakeOutput(double start, double ttft, std::vector<double> gaps, int64_t tokens, int64_t prompt_len) {
  RequestOutput o;
  o.success = true;
  o.start_time_s = start;
  o.ttft_s = ttft;
  o.itl_s = gaps;
  o.latency_s = ttft;
  for (double g : gaps) o.latency_s += g;
  o.output_tokens = tokens;
  o.prompt_len = prompt_len;
  return o;
}

TEST(ServingMetricsTest, DefinitionsOfTtftTpotItlE2el) {
  // 5 tokens in 5 chunks: TTFT 0.1 s, gaps 10/20/30/40 ms -> E2EL 0.2 s,
  // TPOT = (0.2 - 0.1) / 4 = 25 ms, ITL mean 25 ms.
  std::vector<RequestOutput> outs = {MakeOutput(0.0, 0.1, {0.01, 0.02, 0.03, 0.04}, 5, 7)};
  const std::vector<double> pcts = {50, 100};
  BenchmarkMetrics m = CalculateMetrics(outs, 2.0, pcts, {}, nullptr);
  EXPECT_EQ(m.completed, 1);
  EXPECT_EQ(m.failed, 0);
  EXPECT_NEAR(m.ttft.mean_ms, 100.0, 1e-9);
  EXPECT_NEAR(m.tpot.mean_ms, 25.0, 1e-9);
  EXPECT_NEAR(m.itl.mean_ms, 25.0, 1e-9);
  EXPECT_NEAR(m.itl.median_ms, 25.0, 1e-9);
  EXPECT_NEAR(m.itl.percentiles_ms[1].second, 40.0, 1e-9);
  EXPECT_NEAR(m.e2el.mean_ms, 200.0, 1e-9);
  EXPECT_NEAR(m.request_throughput, 0.5, 1e-12);
  EXPECT_NEAR(m.output_throughput, 2.5, 1e-12);
  EXPECT_NEAR(m.total_token_throughput, 6.0, 1e-12);
}

TEST(ServingMetricsTest, MultiTokenChunksMakeItlDifferFromTpot) {
  // 9 tokens in 3 chunks (as with speculative decoding): 2 gaps of 40 ms, but TPOT is
  // (0.18 - 0.1) / 8 = 10 ms.
  std::vector<RequestOutput> outs = {MakeOutput(0.0, 0.1, {0.04, 0.04}, 9, 1)};
  BenchmarkMetrics m = CalculateMetrics(outs, 1.0, {}, {}, nullptr);
  EXPECT_NEAR(m.itl.mean_ms, 40.0, 1e-9);
  EXPECT_NEAR(m.tpot.mean_ms, 10.0, 1e-9);
}

TEST(ServingMetricsTest, FailedRequestsAreCountedButNotMeasured) {
  std::vector<RequestOutput> outs = {MakeOutput(0.0, 0.1, {0.1}, 2, 10), RequestOutput{}, RequestOutput{}};
  outs[1].error = "HTTP 500";
  outs[1].ttft_s = 99;  // must not leak into the stats
  BenchmarkMetrics m = CalculateMetrics(outs, 1.0, {}, {}, nullptr);
  EXPECT_EQ(m.completed, 1);
  EXPECT_EQ(m.failed, 2);
  EXPECT_EQ(m.total_input, 10);
  EXPECT_EQ(m.total_output, 2);
  EXPECT_EQ(m.actual_output_lens, (std::vector<int64_t>{2, 0, 0}));
  EXPECT_NEAR(m.ttft.mean_ms, 100.0, 1e-9);
}

TEST(ServingMetricsTest, OneTokenRequestsHaveNoTpotButCountAsZeroForGoodput) {
  std::vector<RequestOutput> outs = {MakeOutput(0.0, 0.3, {}, 1, 1), MakeOutput(0.0, 0.1, {0.1}, 2, 1)};
  GoodputConfig slo;
  slo.tpot_ms = 50;
  BenchmarkMetrics m = CalculateMetrics(outs, 1.0, {}, slo, nullptr);
  // Only the 2-token request has a TPOT (100 ms); the 1-token one passes the TPOT SLO.
  EXPECT_NEAR(m.tpot.mean_ms, 100.0, 1e-9);
  EXPECT_NEAR(m.request_goodput, 1.0, 1e-12);
}

TEST(ServingMetricsTest, GoodputNeedsEverySlo) {
  std::vector<RequestOutput> outs = {
      MakeOutput(0, 0.2, {0.02, 0.02}, 3, 1),   // ttft 200, tpot 20: good
      MakeOutput(0, 0.6, {0.02, 0.02}, 3, 1),   // ttft 600: bad
      MakeOutput(0, 0.2, {0.08, 0.08}, 3, 1),   // tpot 80: bad
      MakeOutput(0, 0.5, {0.0625, 0.0625}, 3, 1)};  // exactly on both SLOs (binary-exact): good
  std::vector<std::string> args = {"ttft:500 tpot:62.5"};
  auto slo = ParseGoodput(args);
  ASSERT_TRUE(slo.ok()) << slo.status();
  BenchmarkMetrics m = CalculateMetrics(outs, 2.0, {}, *slo, nullptr);
  EXPECT_NEAR(m.request_goodput, 1.0, 1e-12);  // 2 good / 2 s
}

TEST(ServingMetricsTest, ParseGoodputAcceptsVllmForms) {
  std::vector<std::string> separate = {"ttft:500", "tpot:50", "e2el:3000.5"};
  auto a = ParseGoodput(separate);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a->ttft_ms, 500);
  EXPECT_EQ(*a->tpot_ms, 50);
  EXPECT_EQ(*a->e2el_ms, 3000.5);
  std::vector<std::string> none;
  EXPECT_FALSE(ParseGoodput(none)->enabled());
}

TEST(ServingMetricsTest, ParseGoodputRejectsBadInput) {
  for (const char* bad : {"ttft", "ttft:", "ttft:abc", "itl:5", "ttft:-1", "ttft:5:6", "ttft:5ms"}) {
    std::vector<std::string> args = {bad};
    EXPECT_FALSE(ParseGoodput(args).ok()) << bad;
  }
}

TEST(ServingMetricsTest, MissingUsageFallsBackToCounter) {
  std::vector<RequestOutput> outs = {MakeOutput(0, 0.1, {0.1, 0.1}, 0, 1)};
  outs[0].generated_text = "abcdef";
  BenchmarkMetrics counted = CalculateMetrics(outs, 1.0, {}, {}, [](const RequestOutput& o) {
    return static_cast<int64_t>(o.generated_text.size());
  });
  EXPECT_EQ(counted.total_output, 6);
  BenchmarkMetrics chunks = CalculateMetrics(outs, 1.0, {}, {}, nullptr);
  EXPECT_EQ(chunks.total_output, 3);  // one per content chunk
}

TEST(ServingMetricsTest, PeakTokensAndConcurrencyPerSecond) {
  // Two requests overlapping in second 0; the first emits 4 chunks in second 0.
  std::vector<RequestOutput> outs = {MakeOutput(0.0, 0.1, {0.1, 0.1, 0.1}, 4, 1),
                                     MakeOutput(0.5, 0.1, {1.0}, 2, 1)};
  BenchmarkMetrics m = CalculateMetrics(outs, 2.0, {}, {}, nullptr);
  EXPECT_EQ(m.max_output_tokens_per_s, 5.0);  // 4 + the second request's first chunk at 0.6 s
  EXPECT_EQ(m.max_concurrent_requests, 2);
}

}  // namespace
}  // namespace pagellm::bench
