#include "bench/report.h"

#include <cmath>
#include <limits>
#include <string>

#include <gtest/gtest.h>

namespace pagellm::bench {
namespace {

// Produced by Python's str.format with the print statements of vLLM's
// vllm/benchmarks/serve.py (benchmark()) for the same numbers as MakeMetrics().
constexpr const char* kVllmTable = R"(
============ Serving Benchmark Result ============
Successful requests:                     10        
Failed requests:                         2         
Maximum request concurrency:             4         
Request rate configured (RPS):           2.50      
Benchmark duration (s):                  12.35     
Total input tokens:                      1000      
Total generated tokens:                  500       
Request throughput (req/s):              0.81      
Request goodput (req/s):                 0.50      
Output token throughput (tok/s):         40.50     
Peak output token throughput (tok/s):    55.00     
Peak concurrent requests:                4.00      
Total Token throughput (tok/s):          121.50    
---------------Time to First Token----------------
Mean TTFT (ms):                          101.23    
Median TTFT (ms):                        99.50     
P50 TTFT (ms):                           99.50     
P99.9 TTFT (ms):                         150.25    
-----Time per Output Token (excl. 1st token)------
Mean TPOT (ms):                          20.00     
Median TPOT (ms):                        20.00     
P50 TPOT (ms):                           20.00     
P99.9 TPOT (ms):                         30.00     
---------------Inter-token Latency----------------
Mean ITL (ms):                           21.50     
Median ITL (ms):                         20.00     
P50 ITL (ms):                            20.00     
P99.9 ITL (ms):                          45.68     
==================================================
)";

MetricSummary Summary(double mean, double median, double p50, double p999) {
  MetricSummary s;
  s.mean_ms = mean;
  s.median_ms = median;
  s.std_ms = 1.5;
  s.percentiles_ms = {{50.0, p50}, {99.9, p999}};
  return s;
}

BenchmarkMetrics MakeMetrics() {
  BenchmarkMetrics m;
  m.completed = 10;
  m.failed = 2;
  m.total_input = 1000;
  m.total_output = 500;
  m.request_throughput = 0.81;
  m.request_goodput = 0.5;
  m.output_throughput = 40.5;
  m.total_token_throughput = 121.5;
  m.max_output_tokens_per_s = 55.0;
  m.max_concurrent_requests = 4;
  m.ttft = Summary(101.234, 99.5, 99.5, 150.25);
  m.tpot = Summary(20.001, 19.999, 19.999, 30.0);
  m.itl = Summary(21.5, 20.0, 20.0, 45.678);
  m.e2el = Summary(900, 800, 800, 1000);
  m.actual_output_lens = {50, 0};
  return m;
}

ReportSettings MakeSettings() {
  ReportSettings s;
  s.date = "20250102-030405";
  s.model_id = "/models/Qwen3-0.6B";
  s.tokenizer_id = "/models/Qwen3-0.6B";
  s.num_prompts = 12;
  s.request_rate = 2.5;
  s.max_concurrency = 4;
  s.duration_s = 12.3456;
  s.goodput_enabled = true;
  return s;
}

TEST(ReportTest, TableMatchesVllmLayoutByteForByte) {
  const std::string expected = std::string(kVllmTable).substr(1);  // drop the raw string's first \n
  EXPECT_EQ(FormatResultTable(MakeMetrics(), MakeSettings()), expected);
}

TEST(ReportTest, TableOmitsUnsetLines) {
  ReportSettings s = MakeSettings();
  s.max_concurrency.reset();
  s.request_rate = std::numeric_limits<double>::infinity();
  s.goodput_enabled = false;
  s.percentile_metrics = {"e2el"};
  const std::string table = FormatResultTable(MakeMetrics(), s);
  EXPECT_EQ(table.find("Maximum request concurrency"), std::string::npos);
  EXPECT_EQ(table.find("Request rate configured"), std::string::npos);
  EXPECT_EQ(table.find("goodput"), std::string::npos);
  EXPECT_EQ(table.find("TTFT"), std::string::npos);
  EXPECT_NE(table.find("----------------End-to-end Latency----------------\n"), std::string::npos);
  EXPECT_NE(table.find("P99.9 E2EL (ms):                         1000.00"), std::string::npos);
}

TEST(ReportTest, JsonHasVllmKeys) {
  ReportSettings s = MakeSettings();
  std::vector<RequestOutput> outputs(2);
  outputs[0].success = true;
  outputs[0].prompt_len = 7;
  outputs[0].ttft_s = 0.25;
  outputs[0].itl_s = {0.5};
  outputs[1].error = "HTTP 500";
  OrderedJson j = BuildResultJson(MakeMetrics(), outputs, s, /*save_detailed=*/false);
  for (const char* key : {"date", "backend", "model_id", "tokenizer_id", "num_prompts", "request_rate", "burstiness",
                          "max_concurrency", "duration", "completed", "failed", "total_input_tokens",
                          "total_output_tokens", "request_throughput", "request_goodput", "output_throughput",
                          "total_token_throughput", "max_output_tokens_per_s", "max_concurrent_requests",
                          "mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p50_ttft_ms", "p99.9_ttft_ms",
                          "mean_tpot_ms", "p99.9_itl_ms"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_FALSE(j.contains("mean_e2el_ms"));  // not selected
  EXPECT_FALSE(j.contains("ttfts"));
  EXPECT_EQ(j["request_rate"], 2.5);
  EXPECT_EQ(j["p99.9_ttft_ms"], 150.25);
  EXPECT_EQ(j["request_goodput"], 0.5);

  s.goodput_enabled = false;
  s.request_rate = std::numeric_limits<double>::infinity();
  OrderedJson d = BuildResultJson(MakeMetrics(), outputs, s, /*save_detailed=*/true);
  EXPECT_TRUE(d["request_goodput"].is_null());
  EXPECT_EQ(d["request_rate"], "inf");
  EXPECT_EQ(d["input_lens"], OrderedJson::parse("[7, 0]"));
  EXPECT_EQ(d["output_lens"], OrderedJson::parse("[50, 0]"));
  EXPECT_EQ(d["ttfts"][0], 0.25);
  EXPECT_EQ(d["itls"][0], OrderedJson::parse("[0.5]"));
  EXPECT_EQ(d["errors"][1], "HTTP 500");
}

TEST(ReportTest, DefaultFilenameFollowsVllm) {
  ReportSettings s = MakeSettings();
  EXPECT_EQ(DefaultResultFilename(s), "openai-2.5qps-concurrency4-Qwen3-0.6B-20250102-030405.json");
  s.request_rate = 4;
  s.max_concurrency.reset();
  s.label = "pagellm";
  EXPECT_EQ(DefaultResultFilename(s), "pagellm-4.0qps-Qwen3-0.6B-20250102-030405.json");
  s.request_rate = std::numeric_limits<double>::infinity();
  EXPECT_EQ(DefaultResultFilename(s), "pagellm-infqps-Qwen3-0.6B-20250102-030405.json");
}

TEST(ReportTest, PercentileWords) {
  EXPECT_EQ(PercentileWord(99.0), "99");
  EXPECT_EQ(PercentileWord(99.9), "99.9");
  EXPECT_EQ(PercentileWord(50.0), "50");
  EXPECT_EQ(PythonFloat(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(PythonFloat(10.0), "10.0");
  EXPECT_EQ(PythonFloat(0.25), "0.25");
  EXPECT_EQ(PythonFloat(1.0 / 3.0), "0.3333333333333333");  // Python: str(1/3)
}

}  // namespace
}  // namespace pagellm::bench
