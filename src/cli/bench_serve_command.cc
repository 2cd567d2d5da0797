// `pagellm bench serve`: the online serving benchmark, with `vllm bench serve`'s flags,
// definitions, table and JSON (see bench/bench_serve.h).
//
//   pagellm bench serve --base-url http://127.0.0.1:8000 --model /models/Qwen3-0.6B \
//       --dataset-name random --random-input-len 1024 --random-output-len 128 \
//       --num-prompts 200 --request-rate 4 --max-concurrency 32 --goodput ttft:500 tpot:50 \
//       --save-result --result-dir results/
//   pagellm bench serve --base-url http://127.0.0.1:8000 --model /models/Qwen3.5-0.8B \
//       --dataset-name multi-turn --multi-turn-num-conversations 4 --multi-turn-turns 4 \
//       --multi-turn-input-len 256 --multi-turn-output-len 32 --max-concurrency 4
#include <cmath>
#include <limits>
#include <memory>

#include <fmt/format.h>

#include "bench/bench_serve.h"
#include "cli/commands.h"

namespace pagellm::cli {
namespace {

struct BenchServeFlags {
  bench::BenchServeOptions options;
  std::string request_rate = "inf";
  std::string burstiness = "1.0";
};

// "inf" or a positive number, as argparse's float() accepts them.
Status ParseRate(const std::string& text, const char* flag, double* out) {
  size_t used = 0;
  try {
    *out = std::stod(text, &used);
  } catch (...) {
    used = 0;
  }
  if (used == 0 || used != text.size() || std::isnan(*out) || *out <= 0)
    return InvalidArgumentError(fmt::format("{} {}: expected a positive number or inf", flag, text));
  return OkStatus();
}

void AddServerFlags(CLI::App* cmd, bench::BenchServeOptions* o) {
  cmd->add_option("--backend", o->backend, "openai (/v1/completions) or openai-chat; default: from --endpoint");
  cmd->add_option("--base-url", o->base_url, "server base URL, e.g. http://127.0.0.1:8000 (instead of --host/--port)");
  cmd->add_option("--host", o->host, "server host")->capture_default_str();
  cmd->add_option("--port", o->port, "server port")->capture_default_str();
  cmd->add_option("--endpoint", o->endpoint, "API path (default /v1/completions, or /v1/chat/completions for openai-chat)");
  cmd->add_option("--header", o->headers, "extra request headers as KEY=VALUE");
  cmd->add_option("--ready-check-timeout-sec", o->ready_check_timeout_sec,
                  "seconds to wait for the first test request to succeed; 0 skips it")->capture_default_str();
  cmd->add_option("--request-timeout-sec", o->request_timeout_sec, "longest silence on one request's connection")
      ->capture_default_str();
  cmd->add_option("--model", o->model, "model name (sent in requests) and, if a directory, the tokenizer")->required();
  cmd->add_option("--served-model-name", o->served_model_name, "the API's model name, if not --model");
  cmd->add_option("--tokenizer", o->tokenizer, "directory with tokenizer.json (default: --model)");
}

void AddDatasetFlags(CLI::App* cmd, bench::BenchServeOptions* o) {
  cmd->add_option("--dataset-name", o->dataset_name, "random, sharegpt, mixed (30% 512 / 50% 2048 / 20% 16384 "
                  "input tokens) or multi-turn (chat conversations resending their history)")->capture_default_str();
  cmd->add_option("--dataset-path", o->dataset_path, "ShareGPT JSON file for --dataset-name sharegpt");
  cmd->add_option("--random-input-len", o->random.input_len, "input tokens per random prompt")->capture_default_str();
  cmd->add_option("--random-output-len", o->random.output_len, "output tokens per request (random, mixed)")
      ->capture_default_str();
  cmd->add_option("--random-range-ratio", o->random.range_ratio, "lengths uniform in [L(1-r), L(1+r)], r in [0, 1)")
      ->capture_default_str();
  cmd->add_option("--random-prefix-len", o->random.prefix_len, "shared random prefix tokens before each prompt")
      ->capture_default_str();
  cmd->add_option("--sharegpt-output-len", o->sharegpt_output_len, "fixed output length for sharegpt");
  cmd->add_option("--num-prompts", o->num_prompts, "number of requests (not multi-turn)")->capture_default_str();
  bench::MultiTurnParams* mt = &o->multi_turn;
  cmd->add_option("--multi-turn-num-conversations", mt->num_conversations, "multi-turn: number of conversations")
      ->capture_default_str();
  cmd->add_option("--multi-turn-turns", mt->num_turns, "multi-turn: user turns per conversation")->capture_default_str();
  cmd->add_option("--multi-turn-input-len", mt->input_len, "multi-turn: new user tokens per turn")->capture_default_str();
  cmd->add_option("--multi-turn-output-len", mt->output_len, "multi-turn: output tokens per turn (ignore_eos)")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "seed for the dataset and the arrivals")->capture_default_str();
}

void AddTrafficFlags(CLI::App* cmd, BenchServeFlags* f) {
  bench::BenchServeOptions* o = &f->options;
  cmd->add_option("--request-rate", f->request_rate, "requests per second (multi-turn: conversation starts per "
                  "second), or inf (all at once)")->capture_default_str();
  cmd->add_option("--burstiness", f->burstiness, "Gamma shape of the arrival gaps: 1 = Poisson, <1 burstier")
      ->capture_default_str();
  cmd->add_option("--max-concurrency", o->max_concurrency, "most requests in flight at once (multi-turn: "
                  "conversations at once)");
  cmd->add_option("--num-warmups", o->num_warmups, "warmup requests before the run")->capture_default_str();
  cmd->add_flag("--ignore-eos", o->ignore_eos, "send ignore_eos (always on for random and mixed)");
  cmd->add_option("--temperature", o->temperature, "sampling temperature (default 0: greedy)");
  cmd->add_option("--top-p", o->top_p, "top_p");
  cmd->add_option("--top-k", o->top_k, "top_k");
  cmd->add_option("--min-p", o->min_p, "min_p");
  cmd->add_option("--extra-body", o->extra_body, "JSON object merged into every request body");
}

void AddReportFlags(CLI::App* cmd, bench::BenchServeOptions* o) {
  cmd->add_option("--percentile-metrics", o->percentile_metrics, "comma list of ttft,tpot,itl,e2el (default "
                  "ttft,tpot,itl)");
  cmd->add_option("--metric-percentiles", o->metric_percentiles, "comma list of percentiles, e.g. 50,90,99")
      ->capture_default_str();
  cmd->add_option("--goodput", o->goodput, "SLOs in ms as KEY:VALUE (ttft, tpot, e2el), e.g. ttft:500 tpot:50");
  cmd->add_flag("--save-result", o->save_result, "write the result JSON");
  cmd->add_flag("--save-detailed", o->save_detailed, "include per-request arrays in the JSON");
  cmd->add_option("--result-dir", o->result_dir, "directory for the result JSON");
  cmd->add_option("--result-filename", o->result_filename, "file name (default: vLLM's pattern)");
  cmd->add_option("--label", o->label, "label at the start of the default file name (default: --backend)");
}

Status Run(BenchServeFlags* f) {
  PAGELLM_RETURN_IF_ERROR(ParseRate(f->request_rate, "--request-rate", &f->options.request_rate));
  PAGELLM_RETURN_IF_ERROR(ParseRate(f->burstiness, "--burstiness", &f->options.burstiness));
  auto result = bench::RunBenchServe(f->options);
  return result.ok() ? OkStatus() : result.status();
}

}  // namespace

void RegisterBenchServeCommand(CLI::App& bench) {
  auto flags = std::make_shared<BenchServeFlags>();
  CLI::App* cmd = bench.add_subcommand("serve", "online serving benchmark against an OpenAI-compatible server "
                                       "(vllm bench serve)");
  AddServerFlags(cmd, &flags->options);
  AddDatasetFlags(cmd, &flags->options);
  AddTrafficFlags(cmd, flags.get());
  AddReportFlags(cmd, &flags->options);
  cmd->callback([flags] { ReportStatus(Run(flags.get())); });
}

}  // namespace pagellm::cli
