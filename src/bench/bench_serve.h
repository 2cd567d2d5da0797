// `pagellm bench serve`: the online serving benchmark, flag for flag and number for number
// what `vllm bench serve` does against an OpenAI-compatible server (ours or vLLM's):
// build the dataset with the model's tokenizer, check the endpoint answers, run the
// warmups, send the requests at their arrival times under the concurrency cap, then print
// vLLM's result table and optionally save vLLM's result JSON.
//
//   BenchServeOptions options;
//   options.model = "/models/Qwen3-0.6B";  options.base_url = "http://127.0.0.1:8000";
//   options.num_prompts = 200;  options.request_rate = 4;  options.save_result = true;
//   PAGELLM_ASSIGN_OR_RETURN(OrderedJson result, RunBenchServe(options));
//
// The client reaches the server over HTTP only, on the one host it is given.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "bench/datasets.h"
#include "bench/multi_turn.h"
#include "common/json.h"
#include "common/status.h"

namespace pagellm::bench {

struct BenchServeOptions {
  // Server.
  std::string backend;                  // openai | openai-chat; "" = from the endpoint
  std::optional<std::string> base_url;  // http://HOST:PORT[/PREFIX]; else host and port
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string endpoint;                 // "" = /v1/completions or /v1/chat/completions
  std::vector<std::string> headers;     // KEY=VALUE
  int ready_check_timeout_sec = 600;    // 0 skips the initial test request
  int request_timeout_sec = 6 * 3600;   // longest silence on one connection
  // Model and tokenizer.
  std::string model;                    // required; also the tokenizer when it is a directory
  std::optional<std::string> served_model_name;  // the API's "model" field if set
  std::optional<std::string> tokenizer;
  // Dataset.
  std::string dataset_name = "random";  // random | sharegpt | mixed | multi-turn
  std::string dataset_path;
  RandomDatasetParams random;
  std::optional<int64_t> sharegpt_output_len;
  MultiTurnParams multi_turn;           // multi-turn: conversations x turns (num_prompts unused)
  int64_t num_prompts = 1000;
  uint64_t seed = 0;
  // Traffic.
  double request_rate = std::numeric_limits<double>::infinity();
  double burstiness = 1.0;
  std::optional<int64_t> max_concurrency;
  int64_t num_warmups = 0;
  // Sampling.
  bool ignore_eos = false;  // forced on for random and mixed, as vLLM does for random
  std::optional<double> temperature, top_p, min_p;
  std::optional<int64_t> top_k;
  std::string extra_body;   // JSON object merged into every request
  // Report.
  std::string percentile_metrics;  // "" = ttft,tpot,itl
  std::string metric_percentiles = "99";
  std::vector<std::string> goodput;  // ttft:MS tpot:MS e2el:MS
  bool save_result = false;
  bool save_detailed = false;
  std::string result_dir;
  std::string result_filename;
  std::optional<std::string> label;
};

// Runs the benchmark, prints the table to stdout and returns the result JSON (also
// written to a file with save_result). Request failures are counted, not returned.
StatusOr<OrderedJson> RunBenchServe(const BenchServeOptions& options);

// Parses a comma-separated list of numbers in [0, 100] ("25,50,99.9").
StatusOr<std::vector<double>> ParsePercentiles(const std::string& text);
// Parses a comma-separated subset of ttft, tpot, itl, e2el.
StatusOr<std::vector<std::string>> ParsePercentileMetrics(const std::string& text);

}  // namespace pagellm::bench
