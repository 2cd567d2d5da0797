// Speculative decoding with a draft model ({"model": DIR, "num_speculative_tokens": k})
// end to end on the tiny presets: greedy tokens and logprobs, and seeded samples, are
// the same as without speculation, batched, with prefill chunks longer than a draft
// forward's budget, prefix caching, n > 1 and preemption; a draft equal to the target
// has every greedy draft accepted; the draft's KV blocks all come back; a recurrent or
// missing draft is refused by name.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "engine_test_util.h"

namespace pagellm::testing {
namespace {

struct DraftParam {
  std::string target;
  std::string draft;  // "" = the target's own checkpoint
  DType dtype;
};

class EngineDraftModelTest : public ::testing::TestWithParam<DraftParam> {
 protected:
  std::string target_dir() const { return TinyCheckpoint(GetParam().target, GetParam().dtype); }
  std::string draft_dir() const {
    return GetParam().draft.empty() ? target_dir() : TinyCheckpoint(GetParam().draft, GetParam().dtype);
  }
  bool draft_is_target() const { return GetParam().draft.empty(); }
  // Drafts at every batch size: the cost model would turn a draft as large as the
  // target off (k of its forwards cost what they save).
  EngineConfig Config(bool spec, int32_t k = 4) const {
    EngineConfig c = TinyConfig(target_dir(), GetParam().dtype);
    if (spec) {
      c.speculative_config = fmt::format(R"({{"model": "{}", "num_speculative_tokens": {}, "disable_by_batch_size": 64}})",
                                         draft_dir(), k);
    }
    return c;
  }
  std::unique_ptr<EngineCore> Make(const EngineConfig& c) const { return MakeEngineOrDie(c); }
  std::vector<PromptSpec> Specs(int32_t max_tokens) const {
    std::vector<PromptSpec> specs;
    for (int32_t i = 0; i < 4; ++i) specs.push_back({fmt::format("r{}", i), RandomPrompt(9 + 7 * i, 700 + i), GreedyParams(max_tokens)});
    return specs;
  }
  // Verification rows are computed in chunks of k + 1: bit-identical where the kernels
  // do not depend on the rows, rounding otherwise (engine_spec_test.cc).
  void ExpectSame(const RunResult& got, const RunResult& want, const std::string& what) const {
    ExpectSameOutputs(got, want, what, GetParam().dtype == DType::kF32 ? 1e-4f : 0.1f);
  }
  void ExpectNoLeak(const EngineCore& core) const {
    EXPECT_EQ(core.scheduler().kv_cache().num_free_blocks(), core.memory_plan().num_blocks);
    ASSERT_NE(core.draft_proposer(), nullptr);
    EXPECT_EQ(core.draft_proposer()->num_free_blocks(), core.draft_proposer()->num_usable_blocks());
    EXPECT_EQ(core.draft_proposer()->num_tracked(), 0);
  }
};

TEST_P(EngineDraftModelTest, GreedyUnchangedAloneAndBatched) {
  const std::vector<PromptSpec> specs = Specs(40);
  RunResult want = RunOneByOne(*Make(Config(false)), specs);
  auto alone = Make(Config(true));
  RunResult got = RunOneByOne(*alone, specs);
  ExpectSame(got, want, "alone");
  const SpecDecodeStats& st = alone->stats().spec;
  EXPECT_GT(st.num_drafts, 0);
  EXPECT_GT(st.num_draft_model_calls, 0);
  if (draft_is_target() && GetParam().dtype == DType::kF32) {
    // The draft's argmax is the target's greedy token: every draft is accepted.
    EXPECT_EQ(st.num_accepted_tokens, st.num_draft_tokens);
    EXPECT_LT(got.num_steps, 4 * 40 / 3);
  }
  ExpectNoLeak(*alone);
  auto batched = Make(Config(true));
  ExpectSame(RunConcurrently(*batched, specs), want, "batched");
  ExpectNoLeak(*batched);
}

TEST_P(EngineDraftModelTest, ChunksPrefixCacheAndN) {
  std::vector<PromptSpec> specs = Specs(24);
  std::vector<int32_t> long_prompt = RandomPrompt(100, 777);  // > 64: a hybrid snapshot too
  specs.push_back({"long", long_prompt, GreedyParams(24)});
  specs.push_back({"twice", long_prompt, GreedyParams(24)});
  SamplingParams n2 = GreedyParams(24);
  n2.n = 2;
  specs.push_back({"n2", specs[1].prompt_token_ids, n2});
  EngineConfig off = Config(false);
  off.enable_prefix_caching = false;
  RunResult want = RunOneByOne(*Make(off), specs);
  EngineConfig on = Config(true, 3);
  // The draft's catch-up over a 100-token prompt runs in forwards of 24 tokens too.
  on.max_num_batched_tokens = 24;
  on.long_prefill_token_threshold = 16;
  auto core = Make(on);
  ExpectSame(RunConcurrently(*core, specs), want, "chunked + prefix cache + n=2");
  EXPECT_GT(core->stats().prefix_cache_hits, 0);
  EXPECT_GT(core->stats().spec.num_drafts, 0);
  ExpectNoLeak(*core);
}

TEST_P(EngineDraftModelTest, SeededSamplingAndPreemption) {
  std::vector<PromptSpec> specs = Specs(32);
  for (size_t i = 0; i < specs.size(); ++i) {
    specs[i].params.temperature = 0.5f;
    specs[i].params.seed = 99 + i;
  }
  RunResult want = RunOneByOne(*Make(Config(false)), specs);
  // 10 blocks of 16 tokens for both models (the requests need ~16) next to 4 state slots.
  auto core = Make(WithTightKvBudget(Config(true), Make(Config(true))->memory_plan(), 10, 4, 96));
  ExpectSame(RunConcurrently(*core, specs), want, "seeded under preemption");
  EXPECT_GT(core->stats().num_preemptions_total, 0);
  ExpectNoLeak(*core);
}

INSTANTIATE_TEST_SUITE_P(Presets, EngineDraftModelTest,
                         ::testing::Values(DraftParam{"qwen3-tiny", "", DType::kF32},
                                           DraftParam{"qwen3-tiny", "", DType::kBF16},
                                           DraftParam{"qwen3-tiny", "qwen3-moe-tiny", DType::kF32},
                                           DraftParam{"qwen3.5-tiny", "qwen3-tiny", DType::kF32}),
                         [](const auto& info) {
                           std::string name = info.param.target + "_draft_" +
                                              (info.param.draft.empty() ? std::string("self") : info.param.draft) +
                                              (info.param.dtype == DType::kF32 ? "_f32" : "_bf16");
                           for (char& ch : name) ch = (ch == '-' || ch == '.') ? '_' : ch;
                           return name;
                         });

TEST(EngineDraftModelRefusals, RecurrentOrMissingDraft) {
  EngineConfig c = TinyConfig(TinyCheckpoint("qwen3-tiny", DType::kF32), DType::kF32);
  c.speculative_config = fmt::format(R"({{"model": "{}", "num_speculative_tokens": 2}})",
                                     TinyCheckpoint("qwen3.5-tiny", DType::kF32));
  auto hybrid = EngineCore::Create(c);
  ASSERT_FALSE(hybrid.ok());
  EXPECT_NE(hybrid.status().message().find("attention-only"), std::string::npos) << hybrid.status();
  c.speculative_config = R"({"model": "/nonexistent/draft", "num_speculative_tokens": 2})";
  auto missing = EngineCore::Create(c);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/draft"), std::string::npos) << missing.status();
}

}  // namespace
}  // namespace pagellm::testing
