#include "bench/bench_serve.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <optional>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "bench/arrivals.h"
#include "bench/load_generator.h"
#include "bench/multi_turn_bench.h"
#include "bench/report.h"
#include "bench/server_counters.h"
#include "bench/serving_metrics.h"
#include "bench/spec_decode_counters.h"
#include "common/mapped_file.h"
#include "tokenizer/load_tokenizer.h"

namespace pagellm::bench {
namespace {

struct Plan {
  LoadTarget target;
  std::string backend;
  std::vector<double> percentiles;
  std::vector<std::string> percentile_metrics;
  GoodputConfig goodput;
  Json extra_body = Json::object();
  std::string tokenizer_id;
};

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  for (std::string part; std::getline(stream, part, ',');)
    if (!part.empty()) parts.push_back(part);
  return parts;
}

Status ResolveServer(const BenchServeOptions& o, Plan* plan) {
  std::string endpoint = o.endpoint;
  plan->backend = o.backend;
  const bool multi_turn = o.dataset_name == "multi-turn";
  if (plan->backend.empty())
    plan->backend = EndsWith(endpoint, "chat/completions") || multi_turn ? "openai-chat" : "openai";
  if (multi_turn && plan->backend != "openai-chat")
    return InvalidArgumentError("--dataset-name multi-turn sends chat conversations: use --backend openai-chat");
  if (plan->backend == "openai-chat") {
    plan->target.kind = ApiKind::kChatCompletions;
    if (endpoint.empty()) endpoint = "/v1/chat/completions";
    if (!EndsWith(endpoint, "chat/completions"))
      return InvalidArgumentError(fmt::format("--backend openai-chat needs an endpoint ending in chat/completions, got {}", endpoint));
  } else if (plan->backend == "openai") {
    if (endpoint.empty()) endpoint = "/v1/completions";
    if (!EndsWith(endpoint, "completions") || EndsWith(endpoint, "chat/completions"))
      return InvalidArgumentError(fmt::format("--backend openai needs an endpoint ending in /completions, got {}", endpoint));
  } else {
    return InvalidArgumentError(fmt::format("--backend {}: expected openai or openai-chat", plan->backend));
  }
  if (o.base_url) {
    PAGELLM_ASSIGN_OR_RETURN(plan->target.http, ParseBaseUrl(*o.base_url));
  } else {
    if (o.port < 1 || o.port > 65535) return InvalidArgumentError(fmt::format("--port {} is out of range", o.port));
    plan->target.http.host = o.host;
    plan->target.http.port = static_cast<uint16_t>(o.port);
  }
  plan->target.path = plan->target.http.path_prefix + endpoint;
  plan->target.idle_timeout = std::chrono::seconds(o.request_timeout_sec);
  if (const char* key = std::getenv("OPENAI_API_KEY"); key != nullptr && *key != '\0')
    plan->target.headers.emplace_back("Authorization", fmt::format("Bearer {}", key));
  for (const std::string& header : o.headers) {
    const size_t eq = header.find('=');
    if (eq == std::string::npos || eq == 0)
      return InvalidArgumentError(fmt::format("--header {}: expected KEY=VALUE", header));
    plan->target.headers.emplace_back(header.substr(0, eq), header.substr(eq + 1));
  }
  return OkStatus();
}

Status ResolveSampling(const BenchServeOptions& o, Plan* plan) {
  if (o.temperature) plan->extra_body["temperature"] = *o.temperature;
  if (o.top_p) plan->extra_body["top_p"] = *o.top_p;
  if (o.top_k) plan->extra_body["top_k"] = *o.top_k;
  if (o.min_p) plan->extra_body["min_p"] = *o.min_p;
  if (!o.extra_body.empty()) {
    PAGELLM_ASSIGN_OR_RETURN(Json extra, ParseJson(o.extra_body, "--extra-body"));
    if (!extra.is_object()) return InvalidArgumentError("--extra-body must be a JSON object");
    for (const auto& [key, value] : extra.items()) plan->extra_body[key] = value;
  }
  PAGELLM_ASSIGN_OR_RETURN(plan->percentiles, ParsePercentiles(o.metric_percentiles));
  PAGELLM_ASSIGN_OR_RETURN(plan->percentile_metrics,
                           ParsePercentileMetrics(o.percentile_metrics.empty() ? "ttft,tpot,itl" : o.percentile_metrics));
  PAGELLM_ASSIGN_OR_RETURN(plan->goodput, ParseGoodput(o.goodput));
  if (o.num_prompts < 1) return InvalidArgumentError("--num-prompts must be >= 1");
  if (o.num_warmups < 0) return InvalidArgumentError("--num-warmups must be >= 0");
  if (o.max_concurrency && *o.max_concurrency < 1) return InvalidArgumentError("--max-concurrency must be >= 1");
  return OkStatus();
}

StatusOr<std::unique_ptr<tokenizer::Tokenizer>> LoadBenchTokenizer(const BenchServeOptions& o, Plan* plan) {
  plan->tokenizer_id = o.tokenizer ? *o.tokenizer : o.model;
  auto tok = tokenizer::LoadTokenizer(plan->tokenizer_id);
  if (!tok.ok())
    return InvalidArgumentError(fmt::format(
        "the {} dataset needs the model's tokenizer: pass --tokenizer DIR (or a local --model DIR) holding "
        "tokenizer.json ({})", o.dataset_name, tok.status().message()));
  return tok;
}

StatusOr<std::vector<SampleRequest>> LoadDataset(const BenchServeOptions& o, const tokenizer::Tokenizer& tok) {
  if (o.dataset_name == "random") return SampleRandomRequests(tok, o.num_prompts, o.random, o.seed);
  if (o.dataset_name == "mixed") return SampleMixedRequests(tok, o.num_prompts, o.random, o.seed);
  if (o.dataset_name == "sharegpt")
    return SampleShareGptRequests(tok, o.dataset_path, o.num_prompts, o.sharegpt_output_len, o.seed);
  return InvalidArgumentError(fmt::format("--dataset-name {}: expected random, sharegpt, mixed or multi-turn", o.dataset_name));
}

// vLLM's ready check: the first prompt alone, retried until it succeeds or time runs out.
Status WaitForEndpoint(const Plan& plan, const RequestSpec& spec, int timeout_sec) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_sec);
  const double at_zero = 0.0;
  for (;;) {
    PAGELLM_ASSIGN_OR_RETURN(LoadResult r, RunLoad(plan.target, std::span(&spec, 1), std::span(&at_zero, 1), 1));
    if (r.outputs[0].success) return OkStatus();
    if (std::chrono::steady_clock::now() >= deadline)
      return UnavailableError(fmt::format("initial test run failed - check the benchmark arguments and that the server at {}{} "
                                          "is up. Error: {}", plan.target.http.HostHeader(), plan.target.path,
                                          r.outputs[0].error));
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

std::string NowString() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", &local);
  return buf;
}

Status SaveResult(const BenchServeOptions& o, const ReportSettings& settings, const OrderedJson& result) {
  std::filesystem::path path = o.result_filename.empty() ? DefaultResultFilename(settings) : o.result_filename;
  if (!o.result_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.result_dir, ec);
    if (ec) return InvalidArgumentError(fmt::format("cannot create --result-dir {}: {}", o.result_dir, ec.message()));
    path = std::filesystem::path(o.result_dir) / path;
  }
  PAGELLM_RETURN_IF_ERROR(WriteStringToFile(path.string(), result.dump()));
  std::printf("Saved the result to %s\n", path.c_str());
  return OkStatus();
}

void PrintFailures(std::span<const RequestOutput> outputs) {
  int num_printed = 0;
  for (size_t i = 0; i < outputs.size() && num_printed < 10; ++i) {
    if (outputs[i].success) continue;
    std::fprintf(stderr, "request %zu failed: %s\n", i, outputs[i].error.c_str());
    ++num_printed;
  }
}

// The server's counters, best effort (a server without /metrics is benchmarked all the same).
std::optional<SpecDecodeCounters> ScrapeSpecDecode(const Plan& plan) {
  StatusOr<std::string> text = FetchHttpText(plan.target.http, plan.target.http.path_prefix + "/metrics");
  if (!text.ok()) return std::nullopt;
  return ReadSpecDecodeCounters(*text);
}

// *spec: the run's speculative-decoding counters (nullopt without drafts or /metrics).
StatusOr<LoadResult> RunTraffic(const BenchServeOptions& o, const Plan& plan, const std::vector<RequestSpec>& specs,
                                std::optional<SpecDecodeDelta>* spec) {
  if (o.num_warmups > 0) {
    std::printf("Warming up with %lld requests...\n", static_cast<long long>(o.num_warmups));
    std::vector<RequestSpec> warmups(static_cast<size_t>(o.num_warmups), specs[0]);
    std::vector<double> at_zero(warmups.size(), 0.0);
    PAGELLM_ASSIGN_OR_RETURN(LoadResult w, RunLoad(plan.target, warmups, at_zero, o.max_concurrency.value_or(0)));
    std::printf("Warmup run completed.\n");
  }
  ArrivalConfig arrivals{o.request_rate, o.burstiness, o.seed};
  PAGELLM_ASSIGN_OR_RETURN(std::vector<double> offsets, ArrivalOffsets(static_cast<int64_t>(specs.size()), arrivals));
  std::printf("Starting main benchmark run...\n");
  std::printf("Traffic request rate: %s\n", PythonFloat(o.request_rate).c_str());
  std::printf("Burstiness factor: %s (%s)\n", PythonFloat(o.burstiness).c_str(),
              o.burstiness == 1.0 ? "Poisson process" : "Gamma distribution");
  std::printf("Maximum request concurrency: %s\n",
              o.max_concurrency ? std::to_string(*o.max_concurrency).c_str() : "None");
  std::fflush(stdout);
  const std::optional<SpecDecodeCounters> before = ScrapeSpecDecode(plan);
  PAGELLM_ASSIGN_OR_RETURN(LoadResult result, RunLoad(plan.target, specs, offsets, o.max_concurrency.value_or(0)));
  const std::optional<SpecDecodeCounters> after = before ? ScrapeSpecDecode(plan) : std::nullopt;
  if (after) *spec = DiffSpecDecodeCounters(*before, *after);
  return result;
}

// The single-request datasets: specs from the dataset, ready check, then the traffic.
StatusOr<LoadResult> RunSingleTurn(const BenchServeOptions& o, const Plan& plan, const tokenizer::Tokenizer& tok,
                                   std::optional<SpecDecodeDelta>* spec) {
  PAGELLM_ASSIGN_OR_RETURN(std::vector<SampleRequest> samples, LoadDataset(o, tok));
  const bool ignore_eos = o.ignore_eos || o.dataset_name == "random" || o.dataset_name == "mixed";
  std::vector<RequestSpec> specs;
  for (SampleRequest& s : samples)
    specs.push_back({o.served_model_name.value_or(o.model), std::move(s.prompt), s.prompt_len, s.expected_output_len,
                     ignore_eos, plan.extra_body});
  if (o.ready_check_timeout_sec > 0) {
    std::printf("Starting initial single prompt test run...\n");
    std::fflush(stdout);
    PAGELLM_RETURN_IF_ERROR(WaitForEndpoint(plan, specs[0], o.ready_check_timeout_sec));
    std::printf("Initial test run completed.\n");
  }
  return RunTraffic(o, plan, specs, spec);
}

// multi-turn: synthetic conversations (ignore_eos forced on, as for random), whose
// --request-rate is the rate of conversation starts.
StatusOr<MultiTurnRunResult> RunMultiTurn(const BenchServeOptions& o, const Plan& plan, const tokenizer::Tokenizer& tok) {
  MultiTurnTrafficConfig config;
  config.target = plan.target;
  config.request = ConversationRunConfig{o.served_model_name.value_or(o.model), o.multi_turn.output_len,
                                         /*ignore_eos=*/true, plan.extra_body};
  config.params = o.multi_turn;
  config.seed = o.seed;
  config.conversation_rate = o.request_rate;
  config.burstiness = o.burstiness;
  config.max_concurrency = o.max_concurrency.value_or(0);
  config.num_warmups = o.num_warmups;
  config.ready_check_timeout_sec = o.ready_check_timeout_sec;
  return RunMultiTurnTraffic(config, tok);
}

}  // namespace

StatusOr<std::vector<double>> ParsePercentiles(const std::string& text) {
  std::vector<double> values;
  for (const std::string& part : SplitCommas(text)) {
    size_t used = 0;
    double p = -1;
    try {
      p = std::stod(part, &used);
    } catch (...) {
      used = 0;
    }
    if (used != part.size() || !(p >= 0 && p <= 100))
      return InvalidArgumentError(fmt::format("--metric-percentiles: '{}' is not a number in [0, 100]", part));
    values.push_back(p);
  }
  return values;
}

StatusOr<std::vector<std::string>> ParsePercentileMetrics(const std::string& text) {
  std::vector<std::string> metrics = SplitCommas(text);
  for (const std::string& m : metrics)
    if (m != "ttft" && m != "tpot" && m != "itl" && m != "e2el")
      return InvalidArgumentError(fmt::format("--percentile-metrics: '{}' is not one of ttft, tpot, itl, e2el", m));
  return metrics;
}

StatusOr<OrderedJson> RunBenchServe(const BenchServeOptions& o) {
  if (o.model.empty()) return InvalidArgumentError("--model is required");
  Plan plan;
  PAGELLM_RETURN_IF_ERROR(ResolveServer(o, &plan));
  PAGELLM_RETURN_IF_ERROR(ResolveSampling(o, &plan));
  PAGELLM_ASSIGN_OR_RETURN(auto tok, LoadBenchTokenizer(o, &plan));
  std::optional<MultiTurnRunResult> multi_turn;
  LoadResult run;
  std::optional<SpecDecodeDelta> spec;
  int64_t num_prompts = o.num_prompts;
  if (o.dataset_name == "multi-turn") {
    PAGELLM_ASSIGN_OR_RETURN(multi_turn, RunMultiTurn(o, plan, *tok));
    run = LoadResult{multi_turn->run.outputs, multi_turn->run.duration_s};
    num_prompts = o.multi_turn.num_conversations * o.multi_turn.num_turns;
    spec = multi_turn->spec;
  } else {
    PAGELLM_ASSIGN_OR_RETURN(run, RunSingleTurn(o, plan, *tok, &spec));
  }
  const OutputTokenCounter count_tokens = [&tok](const RequestOutput& out) {
    return static_cast<int64_t>(tok->Encode(out.generated_text).size());
  };
  const BenchmarkMetrics metrics = CalculateMetrics(run.outputs, run.duration_s, plan.percentiles, plan.goodput, count_tokens);
  PrintFailures(run.outputs);
  ReportSettings settings{NowString(), plan.backend, o.label, o.model, plan.tokenizer_id, num_prompts,
                          o.request_rate, o.burstiness, o.max_concurrency, run.duration_s, plan.goodput.enabled(),
                          plan.percentile_metrics};
  std::fputs(FormatResultTable(metrics, settings).c_str(), stdout);
  OrderedJson result = BuildResultJson(metrics, run.outputs, settings, o.save_detailed);
  if (spec) {
    std::fputs(FormatSpecDecodeTable(*spec).c_str(), stdout);
    AddSpecDecodeJson(*spec, &result);
  }
  if (multi_turn) {
    const std::vector<TurnSummary> turns =
        SummarizeTurns(run.outputs, o.multi_turn.num_turns, plan.percentiles, count_tokens);
    std::fputs(FormatMultiTurnTable(turns, multi_turn->cache, plan.percentiles).c_str(), stdout);
    if (!multi_turn->cache) std::fprintf(stderr, "could not scrape /metrics: %s\n", multi_turn->cache_error.c_str());
    AddMultiTurnJson(turns, *multi_turn, &result);
  }
  std::fflush(stdout);
  if (o.save_result) PAGELLM_RETURN_IF_ERROR(SaveResult(o, settings, result));
  return result;
}

}  // namespace pagellm::bench
