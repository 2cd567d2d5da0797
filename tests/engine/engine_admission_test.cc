// Engine admission, abort and memory-plan behaviour on a tiny dummy checkpoint: errors
// must carry the numbers and what to change; aborted requests must give back every
// block at the next step; the threaded LlmEngine must produce what EngineCore does.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "engine/llm_engine.h"
#include "engine/memory_plan.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/dnnl_matmul.h"
#include "engine_test_util.h"

namespace pagellm::testing {
namespace {

using ::testing::HasSubstr;

// qwen3-tiny: 4 layers x (K and V) x 2 kv heads x head_dim 32, fp32 => bytes per token.
constexpr int64_t kF32KvBytesPerToken = 4 * 2 * 2 * 32 * 4;

EngineConfig F32Config() { return TinyConfig(TinyCheckpoint(DType::kF32), DType::kF32); }

std::unique_ptr<EngineCore> Make(const EngineConfig& c) {
  auto core = EngineCore::Create(c);
  if (!core.ok()) std::fprintf(stderr, "EngineCore::Create: %s\n", core.status().ToString().c_str());
  PAGELLM_CHECK(core.ok());
  return std::move(*core);
}

TEST(EngineAdmissionTest, AbortOfRunningAndWaitingRequestsFreesEverythingAtNextStep) {
  EngineConfig c = F32Config();
  c.max_num_seqs = 1;  // the second request waits
  auto core = Make(c);
  const int32_t total = core->memory_plan().num_blocks;
  std::map<std::string, std::vector<RequestOutput>> seen;
  auto collect = [&seen](const std::string& id) { return [&seen, id](RequestOutput&& d) { seen[id].push_back(std::move(d)); }; };
  ASSERT_TRUE(core->AddRequest("running", RandomPrompt(40, 1), GreedyParams(500), collect("running")).ok());
  ASSERT_TRUE(core->AddRequest("waiting", RandomPrompt(10, 2), GreedyParams(500), collect("waiting")).ok());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(core->Step().ok());
  EXPECT_EQ(core->scheduler().num_running(), 1);
  EXPECT_EQ(core->scheduler().num_waiting(), 1);
  EXPECT_EQ(core->scheduler().kv_cache().num_free_blocks(), total - 3);  // 40 + 3 tokens
  core->AbortRequest("running");
  core->AbortRequest("waiting");
  core->AbortRequest("never-added");  // ignored
  ASSERT_TRUE(core->Step().ok());
  EXPECT_FALSE(core->HasWork());
  EXPECT_EQ(core->scheduler().kv_cache().num_free_blocks(), total);
  EXPECT_EQ(core->scheduler().kv_cache().num_requests(), 0);
  for (const char* id : {"running", "waiting"}) {
    ASSERT_FALSE(seen[id].empty()) << id;
    EXPECT_TRUE(seen[id].back().finished) << id;
    EXPECT_EQ(seen[id].back().finish_reason, "abort") << id;
  }
  EXPECT_EQ(seen["running"].size(), 5u);  // 4 tokens, then the abort
  EXPECT_EQ(seen["waiting"].size(), 1u);
}

TEST(EngineAdmissionTest, PromptLongerThanMaxModelLenIsRejectedWithBothNumbers) {
  EngineConfig c = F32Config();
  c.max_model_len = 64;
  auto engine = LlmEngine::Create(c);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  Status s = (*engine)->AddRequest("long", RandomPrompt(100, 3), GreedyParams(4), [](RequestOutput&&) {});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("maximum context length is 64 tokens"));
  EXPECT_THAT(s.message(), HasSubstr("100 input tokens"));
  EXPECT_FALSE((*engine)->has_work());
  // Out-of-vocabulary ids fail synchronously too (not later through the callback).
  s = (*engine)->AddRequest("oov", {1, 2, 999999}, GreedyParams(4), [](RequestOutput&&) {});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("999999"));
}

TEST(EngineAdmissionTest, MemoryPlanRefusesWhenOneMaxLenRequestCannotFit) {
  EngineConfig c = F32Config();
  c.kv_cache_memory_bytes = 1 << 20;  // 1 MiB = 32 blocks of 16 fp32 tokens = 512 tokens
  c.max_model_len = 2048;
  ASSERT_EQ((1 << 20) / kF32KvBytesPerToken, 512);
  auto core = EngineCore::Create(c);
  ASSERT_FALSE(core.ok());
  EXPECT_EQ(core.status().code(), StatusCode::kResourceExhausted);
  const std::string& msg = core.status().message();
  EXPECT_THAT(msg, HasSubstr("32 blocks = 512 tokens"));
  EXPECT_THAT(msg, HasSubstr("max_model_len 2048"));
  EXPECT_THAT(msg, HasSubstr("--kv-cache-memory"));
  EXPECT_THAT(msg, HasSubstr("--max-model-len to at most 512"));
}

TEST(EngineAdmissionTest, MemoryPlanLogsMaximumConcurrency) {
  std::ostringstream log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
  spdlog::default_logger()->sinks().push_back(sink);
  auto core = Make(F32Config());
  spdlog::default_logger()->sinks().pop_back();
  // 64 MiB of fp32 KV: 64 MiB / 2 KiB per token = 32768 tokens = 16x 2048-token requests.
  int64_t num_tokens = (64ll << 20) / kF32KvBytesPerToken;
  EXPECT_EQ(core->memory_plan().num_kv_tokens(), num_tokens);
  EXPECT_THAT(log.str(), HasSubstr(fmt::format("Maximum concurrency for 2048 tokens per request: {:.2f}x",
                                               num_tokens / 2048.0)));
  EXPECT_THAT(log.str(), HasSubstr("16.00x"));
}

// The CPU backend's oneDNN packed copies (f32 weights: one more copy of every linear
// layer, lm_head included) are counted with the weights and taken from the budget.
TEST(EngineAdmissionTest, MemoryPlanCountsTheBackendsPackedWeightCopies) {
  auto core = Make(F32Config());
  const MemoryPlan& plan = core->memory_plan();
  ASSERT_GT(plan.prepared_weight_bytes, 0);
  const int64_t loaded = plan.weight_bytes - plan.prepared_weight_bytes;
  // Every weight but the embedding and the norms is a linear layer: packed f32 copies
  // are at least half of what was loaded (the tied embedding serves as lm_head too).
  EXPECT_GT(plan.prepared_weight_bytes, loaded / 2);
  EXPECT_LE(plan.prepared_weight_bytes, 2 * loaded);
  EXPECT_THAT(plan.Summary(), HasSubstr("GiB of packed copies"));

  MemoryPlanInputs in;
  in.weight_bytes = 1ll << 30;
  in.prepared_weight_bytes = 1ll << 30;
  in.workspace_bytes = 0;
  in.kv_bytes_per_block = 1 << 20;
  in.max_model_len = 16;
  in.memory_utilization = 0.5;
  in.device_memory_bytes = 8ll << 30;  // 4 GiB usable - 2 GiB of weights = 2048 blocks
  auto fraction_plan = PlanMemory(in);
  ASSERT_TRUE(fraction_plan.ok()) << fraction_plan.status();
  EXPECT_EQ(fraction_plan->num_blocks, 2048);
  EXPECT_EQ(fraction_plan->weight_bytes, 2ll << 30);
}

// bf16: each linear layer is repacked (bf16_packed.h) and its pages of the safetensors
// mapping are dropped, so a weight is counted once, as its copy; the embedding (tied:
// lm_head's source too) stays mapped and counted.
TEST(EngineAdmissionTest, MemoryPlanCountsRepackedBf16WeightsOnce) {
  auto core = Make(TinyConfig(TinyCheckpoint(DType::kBF16), DType::kBF16));
  const MemoryPlan& plan = core->memory_plan();
  ASSERT_GT(plan.prepared_weight_bytes, 0);
  // The pages dropped are the whole pages inside the repacked tensors: nearly all of them
  // (the copies also hold strip padding, so they are a little larger). With AMX oneDNN
  // keeps a second copy for M > 4 (cpu_backend.h), counted too, replacing nothing.
  const int64_t copies = DnnlUsesAmx() && DetectCpuIsa() == CpuIsa::kAvx512 && !BatchInvariantDefault() ? 2 : 1;
  EXPECT_GT(plan.released_weight_bytes, plan.prepared_weight_bytes / (2 * copies));
  EXPECT_LE(plan.released_weight_bytes, plan.prepared_weight_bytes);
  EXPECT_THAT(plan.Summary(), HasSubstr("which replace"));
  // The model still runs after its file pages went (the embedding reads the mapping):
  // a second engine on the same files, its pages dropped as well, agrees token for token.
  auto again = Make(TinyConfig(TinyCheckpoint(DType::kBF16), DType::kBF16));
  const std::vector<int32_t> prompt = RandomPrompt(40, 5);
  RunResult a = RunConcurrently(*core, {{"a", prompt, GreedyParams(8)}});
  RunResult b = RunConcurrently(*again, {{"a", prompt, GreedyParams(8)}});
  EXPECT_EQ(a.outputs["a"].token_ids, b.outputs["a"].token_ids);

  MemoryPlanInputs in;
  in.weight_bytes = 3ll << 30;
  in.prepared_weight_bytes = 1ll << 30;
  in.released_weight_bytes = 2ll << 30;  // 1 GiB stays mapped, 1 GiB copied
  in.kv_bytes_per_block = 1 << 20;
  in.max_model_len = 16;
  in.memory_utilization = 0.5;
  in.device_memory_bytes = 8ll << 30;  // 4 GiB usable - 2 GiB of resident weights = 2048 blocks
  auto fraction_plan = PlanMemory(in);
  ASSERT_TRUE(fraction_plan.ok()) << fraction_plan.status();
  EXPECT_EQ(fraction_plan->num_blocks, 2048);
  EXPECT_EQ(fraction_plan->weight_bytes, 2ll << 30);
}

// Hybrid plan arithmetic at Qwen3.5-0.8B-like sizes: a 20 MiB state slot, 192 KiB KV
// blocks of 16 tokens (6 attention layers x K,V x 2 heads x 256 x bf16), 4096-token
// requests (256 blocks = 48 MiB), --max-num-seqs 256, snapshots every 4 blocks.
MemoryPlanInputs HybridInputs(int64_t budget_mib) {
  MemoryPlanInputs in;
  in.kv_bytes_per_block = 192 << 10;
  in.block_size = 16;
  in.max_model_len = 4096;
  in.kv_cache_memory_bytes = budget_mib << 20;
  in.state_bytes_per_slot = 20 << 20;
  in.max_num_seqs = 256;
  in.plan_state_snapshots = true;
  in.state_snapshot_interval_blocks = 4;
  return in;
}

TEST(MemoryPlanTest, HybridSlotsAndSnapshotsAreSizedFromTheBudget) {
  // 8 GiB: 256 slots fit (5120 MiB); snapshots take 25% of the 3072 MiB left = 38 x 20
  // MiB (the one-per-4-blocks bound would allow 3072 / 20.75 = 148); the KV gets
  // 3072 - 760 = 2312 MiB = 12330 blocks = 197280 tokens = 48.16 requests of 4096.
  auto plan = PlanMemory(HybridInputs(8192));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->num_state_slots, 256);
  EXPECT_EQ(plan->num_state_snapshots, 38);
  EXPECT_TRUE(plan->state_snapshots_auto);
  EXPECT_EQ(plan->num_blocks, 12330);
  EXPECT_EQ(plan->state_cache_bytes(), (256 + 38) * (20ll << 20));
  EXPECT_NEAR(plan->max_concurrency(), 197280.0 / 4096, 1e-9);
  const std::string summary = plan->Summary();
  EXPECT_THAT(summary, HasSubstr("state slots: 256 x 20.00 MiB = 5.000 GiB (--max-num-seqs 256)"));
  EXPECT_THAT(summary, HasSubstr("+ 38 prefix-cache state snapshots (every 4 blocks, sized from memory) = 0.742 GiB"));
  EXPECT_THAT(summary, HasSubstr("Maximum concurrency for 4096 tokens per request: 48.16x"));

  // --hybrid-state-snapshots 10 overrides the share; the KV gets the rest.
  MemoryPlanInputs in = HybridInputs(8192);
  in.num_state_snapshots = 10;
  plan = PlanMemory(in);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->num_state_snapshots, 10);
  EXPECT_FALSE(plan->state_snapshots_auto);
  EXPECT_EQ(plan->num_blocks, (3072 - 200) * 1024 / 192);

  // Prefix caching off: no snapshots.
  in.plan_state_snapshots = false;
  plan = PlanMemory(in);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->num_state_snapshots, 0);
  EXPECT_EQ(plan->num_blocks, 3072 * 1024 / 192);
}

TEST(MemoryPlanTest, HybridSlotsLimitConcurrencyWhenMemoryIsShort) {
  // 2 GiB: (2048 - 48) / 20 = 100 slots, not 256; the 48 MiB left is one request's
  // blocks, so no snapshot fits (prefix caching then goes off in the engine).
  auto plan = PlanMemory(HybridInputs(2048));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->num_state_slots, 100);
  EXPECT_EQ(plan->num_state_snapshots, 0);
  EXPECT_EQ(plan->num_blocks, 256);
  EXPECT_DOUBLE_EQ(plan->max_concurrency(), 1.0);
  EXPECT_THAT(plan->Summary(), HasSubstr("state slots: 100 x 20.00 MiB = 1.953 GiB (limited by memory, --max-num-seqs 256)"));

  // More explicit snapshots than fit: refused with the numbers.
  MemoryPlanInputs in = HybridInputs(2048);
  in.num_state_snapshots = 200;
  plan = PlanMemory(in);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(plan.status().message(), HasSubstr("--hybrid-state-snapshots 200 (20.00 MiB each)"));
  EXPECT_THAT(plan.status().message(), HasSubstr("after 100 state slots"));
  EXPECT_THAT(plan.status().message(), HasSubstr("room for 0 snapshots"));

  // Small slots next to big blocks: the one-snapshot-per-4-blocks bound decides.
  // 1 MiB slots and blocks, 160-token requests (10 blocks), 8 slots of 1000 MiB: 992
  // left, 25% = 248, but 992 / (1 + 4) = 198 snapshots leave 794 blocks >= 4 x 198.
  in = HybridInputs(1000);
  in.state_bytes_per_slot = 1 << 20;
  in.kv_bytes_per_block = 1 << 20;
  in.max_model_len = 160;
  in.max_num_seqs = 8;
  plan = PlanMemory(in);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->num_state_slots, 8);
  EXPECT_EQ(plan->num_state_snapshots, 198);
  EXPECT_EQ(plan->num_blocks, 794);

  // A big budget and few snapshots wanted: at least kMinStateSnapshots (4) when they fit.
  in = HybridInputs(20 + 48 + 4 * 20 + 1);
  in.max_num_seqs = 1;
  plan = PlanMemory(in);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->num_state_slots, 1);
  EXPECT_EQ(plan->num_state_snapshots, kMinStateSnapshots);
}

TEST(MemoryPlanTest, HybridPlanRefusesWhenNotEvenOneSequenceFits) {
  // One sequence = a 20 MiB slot + 48 MiB of blocks = 68 MiB > 60 MiB.
  auto plan = PlanMemory(HybridInputs(60));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kResourceExhausted);
  const std::string& msg = plan.status().message();
  EXPECT_THAT(msg, HasSubstr("not even one sequence fits"));
  EXPECT_THAT(msg, HasSubstr("max_model_len 4096 tokens needs a hybrid state slot of 20.00 MiB"));
  EXPECT_THAT(msg, HasSubstr("+ 0.047 GiB of KV blocks = 0.066 GiB, but the cache budget is 0.059 GiB"));
  EXPECT_THAT(msg, HasSubstr("--kv-cache-memory 62914560"));
  EXPECT_TRUE(PlanMemory(HybridInputs(68)).ok());
}

TEST(EngineAdmissionTest, ThreadedLlmEngineMatchesOneByOneCore) {
  std::vector<PromptSpec> specs;
  for (int32_t i = 0; i < 4; ++i) specs.push_back({fmt::format("t{}", i), RandomPrompt(10 + 9 * i, 600 + i), GreedyParams(16)});
  EngineConfig ref_config = F32Config();
  ref_config.enable_prefix_caching = false;
  RunResult want = RunOneByOne(*Make(ref_config), specs);

  auto engine = LlmEngine::Create(F32Config());
  ASSERT_TRUE(engine.ok());
  (*engine)->Start();
  std::mutex mu;
  std::map<std::string, std::vector<int32_t>> got;
  auto add = [&](size_t begin) {
    for (size_t i = begin; i < specs.size(); i += 2) {
      const PromptSpec& s = specs[i];
      Status st = (*engine)->AddRequest(s.id, s.prompt_token_ids, s.params, [&, id = s.id](RequestOutput&& d) {
        std::lock_guard<std::mutex> lock(mu);
        got[id].insert(got[id].end(), d.new_token_ids.begin(), d.new_token_ids.end());
      });
      EXPECT_TRUE(st.ok()) << st.ToString();
    }
  };
  std::thread a(add, 0), b(add, 1);
  a.join();
  b.join();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((*engine)->has_work() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  (*engine)->Stop();
  ASSERT_FALSE((*engine)->has_work());
  for (const PromptSpec& s : specs) EXPECT_EQ(got[s.id], want.outputs.at(s.id).token_ids) << s.id;
  EXPECT_EQ((*engine)->core().scheduler().kv_cache().num_free_blocks(), (*engine)->core().memory_plan().num_blocks);
}

}  // namespace
}  // namespace pagellm::testing
