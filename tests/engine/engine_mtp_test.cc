// Speculative decoding with the checkpoint's MTP head ({"method": "mtp"}) end to end on
// the tiny hybrid presets (their dummy checkpoints ship mtp.* as the released ones do):
// greedy tokens and logprobs, and seeded samples, are the same as without speculation,
// alone and batched, with prefill chunks, hybrid prefix caching (A/B/A), n > 1 and
// preemption; the head's KV blocks all come back; a model without a head is refused.
// The heads are random here, so few drafts are accepted: what is tested is that
// nothing the head proposes changes the output, and that it is fed every step.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "engine_test_util.h"

namespace pagellm::testing {
namespace {

struct MtpParam {
  std::string preset;
  DType dtype;
};

class EngineMtpTest : public ::testing::TestWithParam<MtpParam> {
 protected:
  std::string dir() const { return TinyCheckpoint(GetParam().preset, GetParam().dtype); }
  // Drafts at every batch size (the cost model would turn random drafts off).
  EngineConfig Config(bool spec, int32_t k = 2) const {
    EngineConfig c = TinyConfig(dir(), GetParam().dtype);
    if (spec) c.speculative_config = fmt::format(R"({{"method": "mtp", "num_speculative_tokens": {}, "disable_by_batch_size": 64}})", k);
    return c;
  }
  std::unique_ptr<EngineCore> Make(const EngineConfig& c) const { return MakeEngineOrDie(c); }
  std::vector<PromptSpec> Specs(int32_t max_tokens) const {
    std::vector<PromptSpec> specs;
    for (int32_t i = 0; i < 4; ++i) specs.push_back({fmt::format("r{}", i), RandomPrompt(9 + 7 * i, 900 + i), GreedyParams(max_tokens)});
    return specs;
  }
  // Verification rows are computed in chunks of k + 1 (engine_spec_test.cc's bounds).
  void ExpectSame(const RunResult& got, const RunResult& want, const std::string& what) const {
    ExpectSameOutputs(got, want, what, GetParam().dtype == DType::kF32 ? 5e-4f : 0.1f);
  }
  void ExpectNoLeak(const EngineCore& core) const {
    EXPECT_EQ(core.scheduler().kv_cache().num_free_blocks(), core.memory_plan().num_blocks);
    ASSERT_NE(core.mtp_proposer(), nullptr);
    EXPECT_EQ(core.mtp_proposer()->num_free_blocks(), core.mtp_proposer()->num_usable_blocks());
    EXPECT_EQ(core.mtp_proposer()->num_tracked(), 0);
  }
};

TEST_P(EngineMtpTest, GreedyUnchangedAloneAndBatched) {
  const std::vector<PromptSpec> specs = Specs(32);
  RunResult want = RunOneByOne(*Make(Config(false)), specs);
  auto alone = Make(Config(true));
  RunResult got = RunOneByOne(*alone, specs);
  ExpectSame(got, want, "alone");
  const SpecDecodeStats& st = alone->stats().spec;
  EXPECT_GT(st.num_drafts, 0);
  EXPECT_GT(st.num_draft_tokens, st.num_drafts);  // k = 2 but near max_tokens
  // Fed every prompt row and every verified token: no request started inside the head's
  // context (no prefix hits here), so it never restarted.
  const MtpProposer& mtp = *alone->mtp_proposer();
  int64_t prompt_rows = 0;
  for (const PromptSpec& s : specs) prompt_rows += static_cast<int64_t>(s.prompt_token_ids.size());
  EXPECT_GE(mtp.num_rows_fed(), prompt_rows);
  EXPECT_EQ(mtp.num_context_restarts(), 0);
  ExpectNoLeak(*alone);
  auto batched = Make(Config(true));
  ExpectSame(RunConcurrently(*batched, specs), want, "batched");
  ExpectNoLeak(*batched);
}

TEST_P(EngineMtpTest, ChunksPrefixCacheAndN) {
  std::vector<PromptSpec> specs = Specs(20);
  std::vector<int32_t> long_prompt = RandomPrompt(100, 977);  // > 64: a hybrid snapshot too
  specs.push_back({"long", long_prompt, GreedyParams(20)});
  specs.push_back({"other", RandomPrompt(90, 978), GreedyParams(20)});
  specs.push_back({"long-again", long_prompt, GreedyParams(20)});  // A / B / A
  SamplingParams n2 = GreedyParams(20);
  n2.n = 2;
  specs.push_back({"n2", specs[1].prompt_token_ids, n2});
  EngineConfig off = Config(false);
  off.enable_prefix_caching = false;
  RunResult want = RunOneByOne(*Make(off), specs);
  EngineConfig on = Config(true, 3);
  on.max_num_batched_tokens = 24;  // prompt chunks: the head is fed in pieces
  on.long_prefill_token_threshold = 16;
  auto core = Make(on);
  ExpectSame(RunOneByOne(*core, specs), want, "chunked + prefix cache A/B/A + n=2, one by one");
  EXPECT_GT(core->stats().prefix_cache_hits, 0);
  EXPECT_GT(core->mtp_proposer()->num_context_restarts(), 0);  // the hits start inside a prompt
  ExpectNoLeak(*core);
  auto concurrent = Make(on);
  ExpectSame(RunConcurrently(*concurrent, specs), want, "chunked + prefix cache + n=2, concurrently");
  EXPECT_GT(concurrent->stats().spec.num_drafts, 0);
  ExpectNoLeak(*concurrent);
}

TEST_P(EngineMtpTest, SeededSamplingAndPreemption) {
  std::vector<PromptSpec> specs = Specs(28);
  for (size_t i = 0; i < specs.size(); ++i) {
    specs[i].params.temperature = 0.5f;
    specs[i].params.seed = 199 + i;
  }
  RunResult want = RunOneByOne(*Make(Config(false)), specs);
  auto core = Make(WithTightKvBudget(Config(true), Make(Config(true))->memory_plan(), 10, 4, 96));
  ExpectSame(RunConcurrently(*core, specs), want, "seeded under preemption");
  EXPECT_GT(core->stats().num_preemptions_total, 0);
  ExpectNoLeak(*core);
}

INSTANTIATE_TEST_SUITE_P(Presets, EngineMtpTest,
                         ::testing::Values(MtpParam{"qwen3.5-tiny", DType::kF32},
                                           MtpParam{"qwen3.5-tiny", DType::kBF16},
                                           MtpParam{"qwen3.5-moe-tiny", DType::kF32},
                                           MtpParam{"qwen3-next-tiny", DType::kF32}),
                         [](const auto& info) {
                           std::string name = info.param.preset + (info.param.dtype == DType::kF32 ? "_f32" : "_bf16");
                           for (char& ch : name) ch = (ch == '-' || ch == '.') ? '_' : ch;
                           return name;
                         });

TEST(EngineMtpRefusals, ModelWithoutHead) {
  EngineConfig c = TinyConfig(TinyCheckpoint("qwen3-tiny", DType::kF32), DType::kF32);
  c.speculative_config = R"({"method": "mtp", "num_speculative_tokens": 2})";
  auto dense = EngineCore::Create(c);
  ASSERT_FALSE(dense.ok());
  EXPECT_NE(dense.status().message().find("multi-token-prediction"), std::string::npos) << dense.status();
}

}  // namespace
}  // namespace pagellm::testing
