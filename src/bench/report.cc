#include "bench/report.h"

#include <cmath>

#include <fmt/format.h>

namespace pagellm::bench {
namespace {

struct MetricInfo {
  const char* key;     // "ttft"
  const char* name;    // "TTFT"
  const char* header;  // "Time to First Token"
};
constexpr MetricInfo kMetrics[] = {
    {"ttft", "TTFT", "Time to First Token"},
    {"tpot", "TPOT", "Time per Output Token (excl. 1st token)"},
    {"itl", "ITL", "Inter-token Latency"},
    {"e2el", "E2EL", "End-to-end Latency"},
};

const MetricSummary& SummaryOf(const BenchmarkMetrics& m, std::string_view key) {
  if (key == "ttft") return m.ttft;
  if (key == "tpot") return m.tpot;
  if (key == "itl") return m.itl;
  return m.e2el;
}

bool Selected(const ReportSettings& s, std::string_view key) {
  for (const std::string& k : s.percentile_metrics)
    if (k == key) return true;
  return false;
}

std::string Row(std::string_view label, std::string_view value) { return fmt::format("{:<40} {:<10}\n", label, value); }
std::string Row(std::string_view label, double value) { return fmt::format("{:<40} {:<10.2f}\n", label, value); }

}  // namespace

std::string PythonFloat(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == std::floor(v) && std::fabs(v) < 1e16) return fmt::format("{:.1f}", v);
  return fmt::format("{}", v);
}

std::string PercentileWord(double p) {
  if (p == std::floor(p)) return fmt::format("{}", static_cast<int64_t>(p));
  return fmt::format("{}", p);
}

std::string FormatResultTable(const BenchmarkMetrics& m, const ReportSettings& s) {
  std::string out = fmt::format("{:=^50}\n", " Serving Benchmark Result ");
  out += Row("Successful requests:", std::to_string(m.completed));
  out += Row("Failed requests:", std::to_string(m.failed));
  if (s.max_concurrency) out += Row("Maximum request concurrency:", std::to_string(*s.max_concurrency));
  if (!std::isinf(s.request_rate)) out += Row("Request rate configured (RPS):", s.request_rate);
  out += Row("Benchmark duration (s):", s.duration_s);
  out += Row("Total input tokens:", std::to_string(m.total_input));
  out += Row("Total generated tokens:", std::to_string(m.total_output));
  out += Row("Request throughput (req/s):", m.request_throughput);
  if (s.goodput_enabled) out += Row("Request goodput (req/s):", m.request_goodput);
  out += Row("Output token throughput (tok/s):", m.output_throughput);
  out += Row("Peak output token throughput (tok/s):", m.max_output_tokens_per_s);
  out += Row("Peak concurrent requests:", static_cast<double>(m.max_concurrent_requests));
  out += Row("Total Token throughput (tok/s):", m.total_token_throughput);
  for (const MetricInfo& info : kMetrics) {
    if (!Selected(s, info.key)) continue;
    const MetricSummary& summary = SummaryOf(m, info.key);
    out += fmt::format("{:-^50}\n", info.header);
    out += Row(fmt::format("Mean {} (ms):", info.name), summary.mean_ms);
    out += Row(fmt::format("Median {} (ms):", info.name), summary.median_ms);
    for (const auto& [p, value] : summary.percentiles_ms)
      out += Row(fmt::format("P{} {} (ms):", PercentileWord(p), info.name), value);
  }
  out += std::string(50, '=') + "\n";
  return out;
}

OrderedJson BuildResultJson(const BenchmarkMetrics& m, std::span<const RequestOutput> outputs,
                            const ReportSettings& s, bool save_detailed) {
  OrderedJson j;
  j["date"] = s.date;
  j["endpoint_type"] = s.backend;
  j["backend"] = s.backend;
  j["label"] = s.label ? OrderedJson(*s.label) : OrderedJson(nullptr);
  j["model_id"] = s.model_id;
  j["tokenizer_id"] = s.tokenizer_id;
  j["num_prompts"] = s.num_prompts;
  j["request_rate"] = std::isinf(s.request_rate) ? OrderedJson("inf") : OrderedJson(s.request_rate);
  j["burstiness"] = s.burstiness;
  j["max_concurrency"] = s.max_concurrency ? OrderedJson(*s.max_concurrency) : OrderedJson(nullptr);
  j["duration"] = s.duration_s;
  j["completed"] = m.completed;
  j["failed"] = m.failed;
  j["total_input_tokens"] = m.total_input;
  j["total_output_tokens"] = m.total_output;
  j["request_throughput"] = m.request_throughput;
  j["request_goodput"] = s.goodput_enabled ? OrderedJson(m.request_goodput) : OrderedJson(nullptr);
  j["output_throughput"] = m.output_throughput;
  j["total_token_throughput"] = m.total_token_throughput;
  if (save_detailed) {
    OrderedJson input_lens = OrderedJson::array(), ttfts = OrderedJson::array(), itls = OrderedJson::array();
    OrderedJson texts = OrderedJson::array(), errors = OrderedJson::array();
    for (const RequestOutput& o : outputs) {
      input_lens.push_back(o.prompt_len);
      ttfts.push_back(o.ttft_s);
      itls.push_back(o.itl_s);
      texts.push_back(o.generated_text);
      errors.push_back(o.error);
    }
    j["input_lens"] = std::move(input_lens);
    j["output_lens"] = m.actual_output_lens;
    j["ttfts"] = std::move(ttfts);
    j["itls"] = std::move(itls);
    j["generated_texts"] = std::move(texts);
    j["errors"] = std::move(errors);
  }
  j["max_output_tokens_per_s"] = m.max_output_tokens_per_s;
  j["max_concurrent_requests"] = m.max_concurrent_requests;
  for (const MetricInfo& info : kMetrics) {
    if (!Selected(s, info.key)) continue;
    const MetricSummary& summary = SummaryOf(m, info.key);
    j[fmt::format("mean_{}_ms", info.key)] = summary.mean_ms;
    j[fmt::format("median_{}_ms", info.key)] = summary.median_ms;
    j[fmt::format("std_{}_ms", info.key)] = summary.std_ms;
    for (const auto& [p, value] : summary.percentiles_ms)
      j[fmt::format("p{}_{}_ms", PercentileWord(p), info.key)] = value;
  }
  return j;
}

std::string DefaultResultFilename(const ReportSettings& s) {
  const std::string label = s.label ? *s.label : s.backend;
  const std::string concurrency = s.max_concurrency ? fmt::format("-concurrency{}", *s.max_concurrency) : "";
  std::string base_model = s.model_id;
  while (base_model.size() > 1 && base_model.back() == '/') base_model.pop_back();
  if (const size_t slash = base_model.find_last_of('/'); slash != std::string::npos) base_model = base_model.substr(slash + 1);
  return fmt::format("{}-{}qps{}-{}-{}.json", label, PythonFloat(s.request_rate), concurrency, base_model, s.date);
}

}  // namespace pagellm::bench
