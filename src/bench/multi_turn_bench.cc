#include "bench/multi_turn_bench.h"

#include <chrono>
#include <cstdio>
#include <thread>

#include <fmt/format.h>

#include "bench/arrivals.h"
#include "bench/datasets.h"
#include "bench/report.h"

namespace pagellm::bench {
namespace {

// A single-message request whose random text shares nothing with the conversations
// (another seed), for the ready check and the warmups.
StatusOr<RequestSpec> ThrowawaySpec(const MultiTurnTrafficConfig& c, const tokenizer::Tokenizer& tok) {
  const RandomDatasetParams random{.input_len = c.params.input_len, .output_len = c.params.output_len};
  PAGELLM_ASSIGN_OR_RETURN(std::vector<SampleRequest> s, SampleRandomRequests(tok, 1, random, c.seed + 0x9e3779b9u));
  return RequestSpec{c.request.model, std::move(s[0].prompt), s[0].prompt_len, c.request.max_tokens,
                     c.request.ignore_eos, c.request.extra_body};
}

Status WaitForChatEndpoint(const LoadTarget& target, const RequestSpec& spec, int timeout_sec) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_sec);
  const double at_zero = 0.0;
  for (;;) {
    PAGELLM_ASSIGN_OR_RETURN(LoadResult r, RunLoad(target, std::span(&spec, 1), std::span(&at_zero, 1), 1));
    if (r.outputs[0].success) return OkStatus();
    if (std::chrono::steady_clock::now() >= deadline)
      return UnavailableError(fmt::format("initial test run failed - check the benchmark arguments and that the server "
                                          "at {}{} is up. Error: {}", target.http.HostHeader(), target.path,
                                          r.outputs[0].error));
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

StatusOr<std::string> Scrape(const LoadTarget& target) {
  return FetchHttpText(target.http, target.http.path_prefix + "/metrics");
}

Status Prepare(const MultiTurnTrafficConfig& c, const tokenizer::Tokenizer& tok) {
  PAGELLM_ASSIGN_OR_RETURN(RequestSpec throwaway, ThrowawaySpec(c, tok));
  if (c.ready_check_timeout_sec > 0) {
    std::printf("Starting initial single prompt test run...\n");
    std::fflush(stdout);
    PAGELLM_RETURN_IF_ERROR(WaitForChatEndpoint(c.target, throwaway, c.ready_check_timeout_sec));
    std::printf("Initial test run completed.\n");
  }
  if (c.num_warmups > 0) {
    std::printf("Warming up with %lld requests...\n", static_cast<long long>(c.num_warmups));
    std::vector<RequestSpec> warmups(static_cast<size_t>(c.num_warmups), throwaway);
    std::vector<double> at_zero(warmups.size(), 0.0);
    PAGELLM_ASSIGN_OR_RETURN(LoadResult w, RunLoad(c.target, warmups, at_zero, c.max_concurrency));
    std::printf("Warmup run completed.\n");
  }
  return OkStatus();
}

OrderedJson SummaryJson(const MetricSummary& s) {
  OrderedJson j;
  j["mean_ms"] = s.mean_ms;
  j["median_ms"] = s.median_ms;
  j["std_ms"] = s.std_ms;
  for (const auto& [p, value] : s.percentiles_ms) j[fmt::format("p{}_ms", PercentileWord(p))] = value;
  return j;
}

std::optional<double> CachedShare(const TurnSummary& t) {
  if (t.cached_tokens < 0 || t.prompt_tokens <= 0) return std::nullopt;
  return static_cast<double>(t.cached_tokens) / static_cast<double>(t.prompt_tokens);
}

std::string Percent(std::optional<double> share) { return share ? fmt::format("{:.2f}", 100.0 * *share) : "n/a"; }

}  // namespace

StatusOr<MultiTurnRunResult> RunMultiTurnTraffic(const MultiTurnTrafficConfig& c, const tokenizer::Tokenizer& tok) {
  PAGELLM_RETURN_IF_ERROR(ValidateMultiTurnParams(c.params));
  PAGELLM_CHECK(c.target.kind == ApiKind::kChatCompletions);
  PAGELLM_ASSIGN_OR_RETURN(std::vector<Conversation> conversations, SampleConversations(tok, c.params, c.seed));
  PAGELLM_RETURN_IF_ERROR(Prepare(c, tok));
  MultiTurnRunResult result;
  result.params = c.params;
  StatusOr<std::string> before = Scrape(c.target);
  PAGELLM_ASSIGN_OR_RETURN(std::vector<double> offsets,
                           ArrivalOffsets(c.params.num_conversations, ArrivalConfig{c.conversation_rate, c.burstiness, c.seed}));
  std::printf("Starting main benchmark run: %lld conversations x %lld turns, %lld new input tokens and %lld output "
              "tokens per turn\n", static_cast<long long>(c.params.num_conversations),
              static_cast<long long>(c.params.num_turns), static_cast<long long>(c.params.input_len),
              static_cast<long long>(c.params.output_len));
  std::printf("Maximum conversation concurrency: %s\n",
              c.max_concurrency > 0 ? std::to_string(c.max_concurrency).c_str() : "None");
  std::fflush(stdout);
  PAGELLM_ASSIGN_OR_RETURN(result.run, RunConversations(c.target, &conversations, c.request, offsets, c.max_concurrency));
  StatusOr<std::string> after = before.ok() ? Scrape(c.target) : before;
  if (after.ok()) {
    result.cache = DiffCacheCounters(ParsePrometheusText(*before), ParsePrometheusText(*after));
    result.spec = DiffSpecDecodeCounters(ReadSpecDecodeCounters(*before), ReadSpecDecodeCounters(*after));
  } else {
    result.cache_error = std::string(after.status().message());
  }
  return result;
}

std::vector<TurnSummary> SummarizeTurns(std::span<const RequestOutput> outputs, int64_t num_turns,
                                        std::span<const double> percentiles, const OutputTokenCounter& count_tokens) {
  std::vector<TurnSummary> turns(static_cast<size_t>(num_turns));
  for (int64_t t = 0; t < num_turns; ++t) {
    TurnSummary& s = turns[static_cast<size_t>(t)];
    s.turn_idx = t;
    std::vector<RequestOutput> subset;
    for (size_t i = static_cast<size_t>(t); i < outputs.size(); i += static_cast<size_t>(num_turns)) {
      const RequestOutput& o = outputs[i];
      subset.push_back(o);
      if (!o.success) continue;
      s.prompt_tokens += o.prompt_len;
      if (s.cached_tokens >= 0) s.cached_tokens = o.server_cached_tokens >= 0 ? s.cached_tokens + o.server_cached_tokens : -1;
    }
    // Throughputs over a made-up 1 s are discarded; only the latency summaries are kept.
    const BenchmarkMetrics m = CalculateMetrics(subset, 1.0, percentiles, GoodputConfig{}, count_tokens);
    s.completed = m.completed;
    s.failed = m.failed;
    s.ttft = m.ttft, s.tpot = m.tpot, s.itl = m.itl, s.e2el = m.e2el;
  }
  return turns;
}

std::string FormatMultiTurnTable(std::span<const TurnSummary> turns, const std::optional<CacheCounterDelta>& cache,
                                 std::span<const double> percentiles) {
  const std::string p_word = percentiles.empty() ? "" : PercentileWord(percentiles.back());
  std::string out = fmt::format("{:-^50}\n", "Multi-turn: per turn");
  out += fmt::format("{:>4} {:>5} {:>8} {:>7} {:>9} {:>9} {:>9} {:>9}\n", "turn", "ok", "prompt", "cached",
                     "mean", "median", p_word.empty() ? "" : "P" + p_word, "mean");
  out += fmt::format("{:>4} {:>5} {:>8} {:>7} {:>9} {:>9} {:>9} {:>9}\n", "", "", "tok/req", "%", "TTFT ms",
                     "TTFT ms", p_word.empty() ? "" : "TTFT ms", "TPOT ms");
  for (const TurnSummary& t : turns) {
    const double p_ttft = t.ttft.percentiles_ms.empty() ? 0.0 : t.ttft.percentiles_ms.back().second;
    const double mean_prompt = t.completed > 0 ? static_cast<double>(t.prompt_tokens) / static_cast<double>(t.completed) : 0.0;
    out += fmt::format("{:>4} {:>5} {:>8.1f} {:>7} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f}\n", t.turn_idx + 1, t.completed,
                       mean_prompt, Percent(CachedShare(t)), t.ttft.mean_ms, t.ttft.median_ms, p_ttft, t.tpot.mean_ms);
  }
  out += fmt::format("{:-^50}\n", "Server prefix cache (/metrics, this run)");
  if (!cache || !cache->prefix_counters_found) {
    out += fmt::format("{:<40} {:<10}\n", "Prefix cache hit rate (%):", "n/a (no vllm:prefix_cache_* counters)");
    return out;
  }
  out += fmt::format("{:<40} {:<10}\n", "Prefix cache hit rate (%):", Percent(cache->hit_rate));
  out += fmt::format("{:<40} {:<10.0f}\n", "Prefix cache queries (tokens):", cache->prefix_queries);
  out += fmt::format("{:<40} {:<10.0f}\n", "Prefix cache hits (tokens):", cache->prefix_hits);
  for (const auto& [name, value] : cache->hybrid_state) out += fmt::format("{:<40} {:<10.0f}\n", name + ":", value);
  return out;
}

void AddMultiTurnJson(std::span<const TurnSummary> turns, const MultiTurnRunResult& r, OrderedJson* json) {
  OrderedJson mt;
  mt["num_conversations"] = r.params.num_conversations;
  mt["num_turns"] = r.params.num_turns;
  mt["input_len"] = r.params.input_len;
  mt["output_len"] = r.params.output_len;
  OrderedJson per_turn = OrderedJson::array();
  for (const TurnSummary& t : turns) {
    OrderedJson j;
    j["turn"] = t.turn_idx + 1;
    j["completed"] = t.completed;
    j["failed"] = t.failed;
    j["prompt_tokens"] = t.prompt_tokens;
    j["cached_tokens"] = t.cached_tokens >= 0 ? OrderedJson(t.cached_tokens) : OrderedJson(nullptr);
    const std::optional<double> share = CachedShare(t);
    j["cached_share"] = share ? OrderedJson(*share) : OrderedJson(nullptr);
    const char* names[] = {"ttft", "tpot", "itl", "e2el"};
    const MetricSummary* summaries[] = {&t.ttft, &t.tpot, &t.itl, &t.e2el};
    for (int k = 0; k < 4; ++k) j[names[k]] = SummaryJson(*summaries[k]);
    per_turn.push_back(std::move(j));
  }
  mt["per_turn"] = std::move(per_turn);
  (*json)["multi_turn"] = std::move(mt);
  OrderedJson cache;
  if (r.cache && r.cache->prefix_counters_found) {
    cache["queries"] = r.cache->prefix_queries;
    cache["hits"] = r.cache->prefix_hits;
    cache["hit_rate"] = r.cache->hit_rate ? OrderedJson(*r.cache->hit_rate) : OrderedJson(nullptr);
  } else {
    cache["error"] = r.cache ? "no vllm:prefix_cache_* counters" : r.cache_error;
  }
  OrderedJson hybrid = OrderedJson::object();
  if (r.cache)
    for (const auto& [name, value] : r.cache->hybrid_state) hybrid[name] = value;
  cache["hybrid_state"] = std::move(hybrid);
  (*json)["server_prefix_cache"] = std::move(cache);
}

}  // namespace pagellm::bench
