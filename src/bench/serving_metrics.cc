#include "bench/serving_metrics.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "bench/stats.h"

namespace pagellm::bench {
namespace {

Status ParseOneSlo(const std::string& pair, GoodputConfig* config) {
  const size_t colon = pair.find(':');
  if (colon == std::string::npos || pair.find(':', colon + 1) != std::string::npos)
    return InvalidArgumentError(fmt::format(
        "invalid goodput SLO '{}': expected KEY:VALUE pairs such as ttft:500, the value in ms", pair));
  const std::string name = pair.substr(0, colon);
  const std::string value_text = pair.substr(colon + 1);
  double value = 0.0;
  size_t used = 0;
  try {
    value = std::stod(value_text, &used);
  } catch (...) {
    used = 0;
  }
  if (used == 0 || used != value_text.size() || !std::isfinite(value))
    return InvalidArgumentError(fmt::format("invalid goodput SLO '{}': '{}' is not a number", pair, value_text));
  if (value < 0)
    return InvalidArgumentError(fmt::format("invalid goodput SLO '{}': the value must be non-negative", pair));
  if (name == "ttft") {
    config->ttft_ms = value;
  } else if (name == "tpot") {
    config->tpot_ms = value;
  } else if (name == "e2el") {
    config->e2el_ms = value;
  } else {
    return InvalidArgumentError(
        fmt::format("invalid goodput metric '{}' in '{}': expected one of ttft, tpot, e2el", name, pair));
  }
  return OkStatus();
}

MetricSummary Summarize(std::span<const double> values_s, std::span<const double> percentiles) {
  MetricSummary s;
  s.mean_ms = Mean(values_s) * 1000.0;
  s.median_ms = Median(values_s) * 1000.0;
  s.std_ms = StdDev(values_s) * 1000.0;
  for (double p : percentiles) s.percentiles_ms.emplace_back(p, Percentile(values_s, p) * 1000.0);
  return s;
}

bool MeetsSlos(const GoodputConfig& slo, double ttft_s, double tpot_s, double e2el_s) {
  if (slo.ttft_ms && ttft_s > *slo.ttft_ms / 1000.0) return false;
  if (slo.tpot_ms && tpot_s > *slo.tpot_ms / 1000.0) return false;
  if (slo.e2el_ms && e2el_s > *slo.e2el_ms / 1000.0) return false;
  return true;
}

// vLLM's peak metric: content chunks and active requests per 1-second bucket from the
// first successful start.
void ComputePeaks(std::span<const RequestOutput> outputs, BenchmarkMetrics* m) {
  double min_start = 0, max_end = 0;
  bool any = false;
  for (const RequestOutput& o : outputs) {
    if (!o.success) continue;
    min_start = any ? std::min(min_start, o.start_time_s) : o.start_time_s;
    max_end = any ? std::max(max_end, o.start_time_s + o.latency_s) : o.start_time_s + o.latency_s;
    any = true;
  }
  if (!any) return;
  const size_t num_buckets = static_cast<size_t>(std::ceil(max_end - min_start)) + 1;
  std::vector<double> tokens(num_buckets, 0.0), active(num_buckets, 0.0);
  for (const RequestOutput& o : outputs) {
    if (!o.success) continue;
    double t = o.start_time_s + o.ttft_s;
    auto add_token = [&](double when) {
      const double bucket = std::floor(when - min_start);
      if (bucket >= 0 && bucket < static_cast<double>(num_buckets)) tokens[static_cast<size_t>(bucket)] += 1;
    };
    add_token(t);
    for (double gap : o.itl_s) add_token(t += gap);
    const size_t first = static_cast<size_t>(o.start_time_s - min_start);
    const size_t last = static_cast<size_t>(o.start_time_s + o.latency_s - min_start);
    for (size_t s = first; s <= last && s < num_buckets; ++s) active[s] += 1;
  }
  m->max_output_tokens_per_s = *std::max_element(tokens.begin(), tokens.end());
  m->max_concurrent_requests = static_cast<int64_t>(*std::max_element(active.begin(), active.end()));
}

}  // namespace

StatusOr<GoodputConfig> ParseGoodput(std::span<const std::string> pairs) {
  GoodputConfig config;
  for (const std::string& arg : pairs) {
    std::istringstream words(arg);
    std::string pair;
    while (words >> pair) PAGELLM_RETURN_IF_ERROR(ParseOneSlo(pair, &config));
  }
  return config;
}

double RequestTpot(const RequestOutput& output, int64_t output_tokens) {
  if (output_tokens <= 1) return 0.0;
  return (output.latency_s - output.ttft_s) / static_cast<double>(output_tokens - 1);
}

BenchmarkMetrics CalculateMetrics(std::span<const RequestOutput> outputs, double duration_s,
                                  std::span<const double> percentiles, const GoodputConfig& goodput,
                                  const OutputTokenCounter& count_tokens) {
  PAGELLM_CHECK(duration_s > 0);
  BenchmarkMetrics m;
  std::vector<double> ttfts, tpots, itls, e2els;
  int64_t num_good = 0;
  for (const RequestOutput& o : outputs) {
    if (!o.success) {
      m.actual_output_lens.push_back(0);
      ++m.failed;
      continue;
    }
    int64_t output_len = o.output_tokens;
    if (output_len <= 0)
      output_len = count_tokens ? count_tokens(o) : static_cast<int64_t>(o.itl_s.size()) + 1;
    m.actual_output_lens.push_back(output_len);
    m.total_input += o.prompt_len;
    m.total_output += output_len;
    const double tpot = RequestTpot(o, output_len);
    if (output_len > 1) tpots.push_back(tpot);
    itls.insert(itls.end(), o.itl_s.begin(), o.itl_s.end());
    ttfts.push_back(o.ttft_s);
    e2els.push_back(o.latency_s);
    if (goodput.enabled() && MeetsSlos(goodput, o.ttft_s, tpot, o.latency_s)) ++num_good;
    ++m.completed;
  }
  m.request_throughput = static_cast<double>(m.completed) / duration_s;
  m.request_goodput = static_cast<double>(num_good) / duration_s;
  m.output_throughput = static_cast<double>(m.total_output) / duration_s;
  m.total_token_throughput = static_cast<double>(m.total_input + m.total_output) / duration_s;
  m.ttft = Summarize(ttfts, percentiles);
  m.tpot = Summarize(tpots, percentiles);
  m.itl = Summarize(itls, percentiles);
  m.e2el = Summarize(e2els, percentiles);
  ComputePeaks(outputs, &m);
  return m;
}

}  // namespace pagellm::bench
