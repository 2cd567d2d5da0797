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
