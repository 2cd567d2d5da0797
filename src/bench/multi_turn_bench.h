// The traffic and the figures of `pagellm bench serve --dataset-name multi-turn`: samples
// the conversations, checks the endpoint (with a throwaway message that shares nothing
// with them), scrapes /metrics, runs the conversations (bench/conversation_runner.h),
// scrapes /metrics again, and summarises the outputs per turn index.
//
//   MultiTurnTrafficConfig config{.target = target, .request = {...}, .params = {...}};
//   PAGELLM_ASSIGN_OR_RETURN(MultiTurnRunResult r, RunMultiTurnTraffic(config, tok));
//   std::vector<TurnSummary> turns = SummarizeTurns(r.run.outputs, r.params.num_turns, {99.0}, count_tokens);
//   std::fputs(FormatMultiTurnTable(turns, r.cache, {99.0}).c_str(), stdout);
//   AddMultiTurnJson(turns, r, &result_json);
//
// Per turn it reports TTFT/TPOT/ITL/E2EL and the cached share of the prompt as the
// server's usage.prompt_tokens_details.cached_tokens tells it; over the run, the server's
// prefix-cache hit rate from vllm:prefix_cache_{hits,queries}_total and the
// pagellm:hybrid_state_* metrics (snapshot hits, saves, evictions; gauges).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bench/conversation_runner.h"
#include "bench/multi_turn.h"
#include "bench/server_counters.h"
#include "bench/serving_metrics.h"
#include "bench/spec_decode_counters.h"
#include "common/json.h"
#include "tokenizer/tokenizer.h"

namespace pagellm::bench {

struct MultiTurnTrafficConfig {
  LoadTarget target;               // a chat endpoint
  ConversationRunConfig request;   // model, max_tokens (= params.output_len), ignore_eos, extra body
  MultiTurnParams params;
  uint64_t seed = 0;
  double conversation_rate = std::numeric_limits<double>::infinity();  // conversation starts per second
  double burstiness = 1.0;
  int64_t max_concurrency = 0;     // conversations at once; <= 0 unlimited
  int64_t num_warmups = 0;         // throwaway single-message requests before the run
  int ready_check_timeout_sec = 600;
};

struct MultiTurnRunResult {
  MultiTurnParams params;
  ConversationRunResult run;
  std::optional<CacheCounterDelta> cache;  // nullopt when /metrics could not be scraped
  std::string cache_error;                 // why not
  std::optional<SpecDecodeDelta> spec;     // nullopt: not scraped, or no drafts
};

StatusOr<MultiTurnRunResult> RunMultiTurnTraffic(const MultiTurnTrafficConfig& config,
                                                 const tokenizer::Tokenizer& tokenizer);

struct TurnSummary {
  int64_t turn_idx = 0;
  int64_t completed = 0;
  int64_t failed = 0;
  // Sums over the turn's successful requests of the server's usage; cached_tokens is -1
  // when some response carried no prompt_tokens_details.
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;
  MetricSummary ttft, tpot, itl, e2el;
};

// outputs is conversation-major ([conversation * num_turns + turn]).
std::vector<TurnSummary> SummarizeTurns(std::span<const RequestOutput> outputs, int64_t num_turns,
                                        std::span<const double> percentiles, const OutputTokenCounter& count_tokens);

std::string FormatMultiTurnTable(std::span<const TurnSummary> turns, const std::optional<CacheCounterDelta>& cache,
                                 std::span<const double> percentiles);

// Adds "multi_turn" (parameters and the per-turn figures) and "server_prefix_cache"
// (hits, queries, hit_rate, hybrid_state) to the result JSON.
void AddMultiTurnJson(std::span<const TurnSummary> turns, const MultiTurnRunResult& result, OrderedJson* json);

}  // namespace pagellm::bench
