// The two outputs of `pagellm bench serve`: vLLM's terminal table ("==== Serving
// Benchmark Result ====", 40-column labels, 2-decimal values) and the result JSON with
// vLLM's keys (duration, completed, ..., mean_ttft_ms, median_ttft_ms, std_ttft_ms,
// p99_ttft_ms, ..., request_goodput), so scripts written for `vllm bench serve` read it.
//
//   ReportSettings settings{.request_rate = inf, .percentile_metrics = {"ttft", "tpot", "itl"}};
//   std::fputs(FormatResultTable(metrics, settings).c_str(), stdout);
//   OrderedJson result = BuildResultJson(metrics, outputs, settings, /*save_detailed=*/false);
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bench/serving_metrics.h"
#include "common/json.h"

namespace pagellm::bench {

struct ReportSettings {
  // Run description, written at the top of the JSON (vLLM's "setup" and "traffic" keys).
  std::string date;           // "%Y%m%d-%H%M%S"
  std::string backend = "openai";
  std::optional<std::string> label;
  std::string model_id;
  std::string tokenizer_id;
  int64_t num_prompts = 0;
  double request_rate = std::numeric_limits<double>::infinity();
  double burstiness = 1.0;
  std::optional<int64_t> max_concurrency;
  double duration_s = 0.0;
  bool goodput_enabled = false;
  std::vector<std::string> percentile_metrics = {"ttft", "tpot", "itl"};  // of ttft, tpot, itl, e2el
};

std::string FormatResultTable(const BenchmarkMetrics& metrics, const ReportSettings& settings);

// With save_detailed, the per-request arrays input_lens, output_lens, ttfts, itls,
// generated_texts and errors are included (seconds, as vLLM writes them).
OrderedJson BuildResultJson(const BenchmarkMetrics& metrics, std::span<const RequestOutput> outputs,
                            const ReportSettings& settings, bool save_detailed);

// vLLM's default name: "{label}-{rate}qps[-concurrency{N}]-{model basename}-{date}.json",
// the rate printed as Python prints a float ("inf", "4.0", "0.5").
std::string DefaultResultFilename(const ReportSettings& settings);

// Python's str(float): "inf", "4.0", "0.25" (vLLM prints and names files with it).
std::string PythonFloat(double v);

// "99" for 99.0, "99.9" for 99.9: the percentile's word in keys and labels.
std::string PercentileWord(double p);

}  // namespace pagellm::bench
