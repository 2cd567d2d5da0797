// `pagellm bench throughput`: offline throughput of the engine, like `vllm bench
// throughput` with the random dataset: --num-prompts prompts of exactly --input-len
// random ordinary-vocabulary tokens, each generating exactly --output-len tokens (EOS
// ignored), all submitted at once; reports requests/s, total tokens/s (prompt +
// output, vLLM's definition) and output tokens/s, optionally as JSON.
//
//   pagellm bench throughput --model DIR --load-format dummy --num-prompts 16 \
//       --input-len 16 --output-len 64 --output-json result.json
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "common/json.h"
#include "common/logging.h"
#include "common/mapped_file.h"
#include "engine/llm_engine.h"

namespace pagellm::cli {
namespace {

struct BenchThroughputFlags {
  EngineConfig engine;
  int32_t num_prompts = 1000;
  int32_t input_len = 1024;
  int32_t output_len = 128;
  int32_t n = 1;
  uint64_t seed = 0;
  std::string output_json;
};

// Ids a random prompt may use: the tokenizer's ordinary (non-added, non-special)
// vocabulary, within the model's embedding table.
std::vector<int32_t> OrdinaryVocabulary(const EngineCore& core) {
  const tokenizer::Tokenizer& tok = core.tokenizer();
  int32_t limit = std::min<int32_t>(tok.vocab_size(), static_cast<int32_t>(core.model_config().vocab_size));
  std::vector<int32_t> ids;
  ids.reserve(static_cast<size_t>(limit));
  for (int32_t id = 0; id < limit; ++id) {
    if (tok.added_vocabulary().FindById(id) == nullptr && !tok.IsSpecial(id)) ids.push_back(id);
  }
  return ids;
}

std::vector<std::vector<int32_t>> RandomPrompts(const EngineCore& core, const BenchThroughputFlags& f) {
  std::vector<int32_t> vocab = OrdinaryVocabulary(core);
  std::mt19937_64 rng(f.seed);
  std::uniform_int_distribution<size_t> pick(0, vocab.size() - 1);
  std::vector<std::vector<int32_t>> prompts(static_cast<size_t>(f.num_prompts));
  for (auto& p : prompts) {
    p.resize(static_cast<size_t>(f.input_len));
    for (int32_t& id : p) id = vocab[pick(rng)];
  }
  return prompts;
}

Status Validate(const BenchThroughputFlags& f) {
  if (f.num_prompts <= 0) return InvalidArgumentError("--num-prompts must be positive");
  if (f.input_len <= 0) return InvalidArgumentError("--input-len must be positive");
  if (f.output_len <= 0) return InvalidArgumentError("--output-len must be positive");
  if (f.n <= 0) return InvalidArgumentError("--n must be positive");
  return OkStatus();
}

Status RunBenchThroughput(const BenchThroughputFlags& f) {
  PAGELLM_RETURN_IF_ERROR(Validate(f));
  PAGELLM_ASSIGN_OR_RETURN(std::unique_ptr<LlmEngine> engine, LlmEngine::Create(f.engine));
  std::vector<std::vector<int32_t>> prompts = RandomPrompts(engine->core(), f);
  // vLLM's benchmark: temperature 1, top_p 1, EOS ignored, exactly output_len tokens.
  SamplingParams params;
  params.n = f.n;
  params.temperature = 1.0f;
  params.top_p = 1.0f;
  params.top_k = -1;
  params.min_p = 0.0f;
  params.repetition_penalty = 1.0f;
  params.ignore_eos = true;
  params.max_tokens = f.output_len;
  int64_t total_output = 0, total_prompt = 0;
  Status failed;
  auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < prompts.size(); ++i) {
    total_prompt += static_cast<int64_t>(prompts[i].size());
    PAGELLM_RETURN_IF_ERROR(engine->AddRequest(fmt::format("bench-{}", i), std::move(prompts[i]), params,
                                               [&](RequestOutput&& d) {
      total_output += static_cast<int64_t>(d.new_token_ids.size());
      if (!d.error.ok() && failed.ok()) failed = d.error;
    }));
  }
  PAGELLM_RETURN_IF_ERROR(engine->RunUntilIdle());
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  PAGELLM_RETURN_IF_ERROR(failed);
  int64_t total_tokens = total_prompt + total_output;
  std::printf("Throughput: %.2f requests/s, %.2f total tokens/s, %.2f output tokens/s\n",
              f.num_prompts / elapsed, total_tokens / elapsed, total_output / elapsed);
  std::printf("Total num prompt tokens:  %lld\nTotal num output tokens:  %lld\n",
              static_cast<long long>(total_prompt), static_cast<long long>(total_output));
  std::fflush(stdout);
  if (!f.output_json.empty()) {
    OrderedJson j = {{"elapsed_time", elapsed},
                     {"num_requests", f.num_prompts},
                     {"total_num_tokens", total_tokens},
                     {"total_output_tokens", total_output},
                     {"requests_per_second", f.num_prompts / elapsed},
                     {"tokens_per_second", total_tokens / elapsed},
                     {"output_tokens_per_second", total_output / elapsed}};
    PAGELLM_RETURN_IF_ERROR(WriteStringToFile(f.output_json, j.dump(4) + "\n"));
  }
  return OkStatus();
}

}  // namespace

void RegisterBenchThroughputCommand(CLI::App& bench) {
  auto f = std::make_shared<BenchThroughputFlags>();
  CLI::App* cmd = bench.add_subcommand("throughput", "offline throughput on random prompts (vllm bench throughput)");
  cmd->add_option("--model", f->engine.model, "model directory")->required();
  cmd->add_option("--num-prompts", f->num_prompts, "number of requests")->capture_default_str();
  cmd->add_option("--input-len", f->input_len, "prompt tokens per request (exact)")->capture_default_str();
  cmd->add_option("--output-len", f->output_len, "generated tokens per request (exact; EOS ignored)")
      ->capture_default_str();
  cmd->add_option("--n", f->n, "samples per prompt")->capture_default_str();
  cmd->add_option("--seed", f->seed, "seed of the random prompts, the sampler and dummy weights")
      ->capture_default_str();
  cmd->add_option("--output-json", f->output_json, "write the results to this JSON file");
  AddEngineFlags(cmd, &f->engine);
  cmd->callback([f] {
    f->engine.seed = f->seed;
    if (RunIfMpiWorkerRank(f->engine)) return;
    ReportStatus(RunBenchThroughput(*f));
  });
}

}  // namespace pagellm::cli
