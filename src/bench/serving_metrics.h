// Serving metrics with `vllm bench serve`'s definitions (vllm/benchmarks/serve.py,
// calculate_metrics): per-request TTFT, TPOT, ITL and E2EL, the throughputs over the
// benchmark duration, goodput against SLOs, and the 1-second peak of output tokens.
//
//   PAGELLM_ASSIGN_OR_RETURN(GoodputConfig slo, ParseGoodput({"ttft:500", "tpot:50"}));
//   BenchmarkMetrics m = CalculateMetrics(outputs, duration_s, {99.0}, slo, count_tokens);
//   m.tpot.mean_ms, m.request_goodput, ...
//
// Definitions (all client-side, successful requests only):
//   TTFT  = first content chunk - request sent
//   ITL   = gaps between successive content chunks (one per chunk, so a chunk carrying
//           several tokens counts once; that is why ITL and TPOT can differ)
//   TPOT  = (E2EL - TTFT) / (output_tokens - 1), only for output_tokens > 1; a request
//           with <= 1 output token counts as TPOT 0 for goodput
//   E2EL  = last data event - request sent
//   goodput = requests meeting every given SLO (<=) / duration
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace pagellm::bench {

// One request as the client saw it. Times are seconds; start_time_s is measured from the
// benchmark start, the others from the moment the request was sent.
struct RequestOutput {
  bool success = false;
  int64_t prompt_len = 0;       // input tokens as the dataset counted them
  int64_t output_tokens = 0;    // usage.completion_tokens; 0 if the server sent no usage
  int64_t server_prompt_tokens = -1;  // usage.prompt_tokens; -1 if not reported
  int64_t server_cached_tokens = -1;  // usage.prompt_tokens_details.cached_tokens; -1 if not reported
  double start_time_s = 0.0;
  double ttft_s = 0.0;
  double latency_s = 0.0;       // E2EL
  std::vector<double> itl_s;    // one gap per content chunk after the first
  std::string generated_text;
  std::string error;            // empty on success
};

// SLOs in milliseconds; a missing entry is not checked.
struct GoodputConfig {
  std::optional<double> ttft_ms;
  std::optional<double> tpot_ms;
  std::optional<double> e2el_ms;
  bool enabled() const { return ttft_ms || tpot_ms || e2el_ms; }
};

// Parses "KEY:VALUE" pairs (KEY in ttft, tpot, e2el; VALUE >= 0 ms). Each element may
// also hold several whitespace-separated pairs ("ttft:500 tpot:50").
StatusOr<GoodputConfig> ParseGoodput(std::span<const std::string> pairs);

struct MetricSummary {
  double mean_ms = 0.0;
  double median_ms = 0.0;
  double std_ms = 0.0;
  std::vector<std::pair<double, double>> percentiles_ms;  // (percentile, value)
};

struct BenchmarkMetrics {
  int64_t completed = 0;
  int64_t failed = 0;
  int64_t total_input = 0;
  int64_t total_output = 0;
  double request_throughput = 0.0;      // completed / s
  double request_goodput = 0.0;         // good requests / s
  double output_throughput = 0.0;       // output tokens / s
  double total_token_throughput = 0.0;  // (input + output) tokens / s
  MetricSummary ttft, tpot, itl, e2el;
  double max_output_tokens_per_s = 0.0;  // busiest 1-s bucket of content chunks
  int64_t max_concurrent_requests = 0;   // most requests active in one 1-s bucket
  std::vector<int64_t> actual_output_lens;  // [num_requests], 0 for failed ones
};

// Counts the output tokens of a request whose server sent no usage (vLLM re-tokenizes
// the generated text). May be empty, then the number of content chunks is used.
using OutputTokenCounter = std::function<int64_t(const RequestOutput&)>;

// Precondition: duration_s > 0.
BenchmarkMetrics CalculateMetrics(std::span<const RequestOutput> outputs, double duration_s,
                                  std::span<const double> percentiles, const GoodputConfig& goodput,
                                  const OutputTokenCounter& count_tokens);

// TPOT of one request in seconds: (latency - ttft) / (output_tokens - 1), or 0 when the
// request produced at most one token.
double RequestTpot(const RequestOutput& output, int64_t output_tokens);

}  // namespace pagellm::bench
