// Speculative decoding (n-gram) end to end on the tiny dense, MoE and hybrid presets:
// greedy tokens and their logprobs, and seeded random samples, are the same with
// speculation on and off, batched, in prefill chunks, with prefix caching, under
// preemption and with n > 1; drafts are really proposed and accepted; no KV block
// leaks; a hybrid model's rejected drafts never reach its GDN state.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "engine_test_util.h"

namespace pagellm::testing {
namespace {

using SpecParam = std::tuple<std::string, DType>;

constexpr const char* kNgram =
    R"({"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 1, "prompt_lookup_max": 3})";

class EngineSpecTest : public ::testing::TestWithParam<SpecParam> {
 protected:
  const std::string& preset() const { return std::get<0>(GetParam()); }
  DType dtype() const { return std::get<1>(GetParam()); }
  EngineConfig Config(bool spec) const {
    EngineConfig c = TinyConfig(TinyCheckpoint(preset(), dtype()), dtype());
    if (spec) c.speculative_config = kNgram;
    return c;
  }
  std::unique_ptr<EngineCore> Make(const EngineConfig& c) const { return MakeEngineOrDie(c); }
  // Prompts that repeat themselves (what n-gram lookup is for) and random ones.
  std::vector<PromptSpec> Specs(int32_t max_tokens) const {
    std::vector<PromptSpec> specs;
    for (int32_t i = 0; i < 4; ++i) {
      std::vector<int32_t> unit = RandomPrompt(7 + i, 900 + i);
      std::vector<int32_t> prompt;
      for (int r = 0; r < 5; ++r) prompt.insert(prompt.end(), unit.begin(), unit.end());
      specs.push_back({fmt::format("rep{}", i), prompt, GreedyParams(max_tokens)});
    }
    specs.push_back({"rand", RandomPrompt(40, 950), GreedyParams(max_tokens)});
    return specs;
  }
  // The verification chunk computes the same logits as a decode step: bit-identical
  // where the kernels do not depend on the number of rows, rounding otherwise. In bf16
  // that rounding can move an activation by a bf16 step where the kernel takes bf16
  // activations (AVX-512 BF16), which the random weights amplify: 0.1 (measured up to
  // 0.026 on Zen 4 with 5-row verification chunks). In f32 the summation order of a
  // 5-row GEMM differs from a 1-row GEMV: logprobs near -12 moved by 1.4e-4 (~1e-5
  // relative) in a clean-clone run of the MoE preset on Zen 5, so 5e-4.
  void ExpectSame(const RunResult& got, const RunResult& want, const std::string& what, float f32_tol = 5e-4f) const {
    ExpectSameOutputs(got, want, what, dtype() == DType::kF32 ? f32_tol : 0.1f);
  }
  void ExpectNoLeak(const EngineCore& core) const {
    EXPECT_EQ(core.scheduler().kv_cache().num_free_blocks(), core.memory_plan().num_blocks);
    EXPECT_EQ(core.scheduler().kv_cache().num_requests(), 0);
  }
};

TEST_P(EngineSpecTest, GreedyUnchangedBatchedAndAlone) {
  const std::vector<PromptSpec> specs = Specs(48);
  RunResult want = RunOneByOne(*Make(Config(false)), specs);
  auto alone = Make(Config(true));
  ExpectSame(RunOneByOne(*alone, specs), want, "alone");
  const EngineStats st = alone->stats();
  EXPECT_GT(st.spec.num_drafts, 0);
  EXPECT_GT(st.spec.num_accepted_tokens, 0) << "no draft was ever accepted: nothing was verified";
  EXPECT_LE(st.spec.num_accepted_tokens, st.spec.num_draft_tokens);
  ASSERT_EQ(st.spec.accepted_per_pos.size(), 4u);
  EXPECT_GE(st.spec.accepted_per_pos[0], st.spec.accepted_per_pos[3]);  // position i needs 0..i-1
  ExpectNoLeak(*alone);

  auto batched = Make(Config(true));
  RunResult got = RunConcurrently(*batched, specs);
  ExpectSame(got, want, "batched");
  // Fewer steps than tokens: drafts were accepted.
  EXPECT_LT(got.num_steps, 48 + 10);
  ExpectNoLeak(*batched);
}

TEST_P(EngineSpecTest, ChunkedPrefillPrefixCacheAndN) {
  std::vector<PromptSpec> specs = Specs(32);
  // 100 tokens: past a hybrid model's first state snapshot (every 64 tokens), so the
  // second copy is a prefix-cache hit for every model family.
  std::vector<int32_t> long_prompt;
  for (int r = 0; r < 5; ++r) {
    const std::vector<int32_t> unit = RandomPrompt(20, 960);
    long_prompt.insert(long_prompt.end(), unit.begin(), unit.end());
  }
  specs.push_back({"long", long_prompt, GreedyParams(32)});
  specs.push_back({"twice", long_prompt, GreedyParams(32)});
  SamplingParams n2 = GreedyParams(32);
  n2.n = 2;
  specs.push_back({"n2", specs[1].prompt_token_ids, n2});
  EngineConfig off = Config(false);
  off.enable_prefix_caching = false;
  RunResult want = RunOneByOne(*Make(off), specs);
  EngineConfig on = Config(true);
  on.max_num_batched_tokens = 24;  // prompts of 35-50 tokens run in chunks
  on.long_prefill_token_threshold = 16;
  // Drafts at every batch size (the cost model would turn them off for 8 requests of
  // this tiny model, whose steps cost per token, not per weight read).
  on.speculative_config =
      R"({"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 3, "prompt_lookup_min": 1, "disable_by_batch_size": 64})";
  auto core = Make(on);
  ExpectSame(RunConcurrently(*core, specs), want, "chunked + prefix cache + n=2");
  EXPECT_GT(core->stats().prefix_cache_hits, 0);
  EXPECT_GT(core->stats().spec.num_accepted_tokens, 0);
  ExpectNoLeak(*core);
}

TEST_P(EngineSpecTest, PreemptionKeepsTokens) {
  const std::vector<PromptSpec> specs = Specs(40);
  RunResult want = RunOneByOne(*Make(Config(false)), specs);
  // 192 tokens of KV (the requests need ~400) next to 5 state slots with their checkpoints.
  auto core = Make(WithTightKvBudget(Config(true), Make(Config(false))->memory_plan(), 12, 5, 128));
  ExpectSame(RunConcurrently(*core, specs), want, "preemption");
  EXPECT_GT(core->stats().num_preemptions_total, 0);
  ExpectNoLeak(*core);
}

TEST_P(EngineSpecTest, SeededSamplingUnchanged) {
  // One random draw per emitted token, drafts or not: a seeded request samples the same
  // tokens (and n-gram verification is exact rejection sampling, spec/rejection_sampler.h).
  std::vector<PromptSpec> specs = Specs(40);
  for (size_t i = 0; i < specs.size(); ++i) {
    specs[i].params.temperature = 0.3f;
    specs[i].params.top_p = 0.9f;
    specs[i].params.seed = 1234 + i;
    specs[i].params.repetition_penalty = 1.05f;  // sees the accepted drafts
  }
  RunResult want = RunOneByOne(*Make(Config(false)), specs);
  auto core = Make(Config(true));
  ExpectSame(RunConcurrently(*core, specs), want, "seeded");
  ExpectNoLeak(*core);
}

TEST_P(EngineSpecTest, StopsAndLimitsInsideAcceptedDrafts) {
  // max_tokens small and odd, and a stop token that a draft would carry past.
  std::vector<PromptSpec> specs = Specs(7);
  RunResult free_run = RunOneByOne(*Make(Config(false)), Specs(48));
  const std::vector<int32_t>& rep0 = free_run.outputs.at("rep0").token_ids;
  specs[0].params.max_tokens = 48;
  specs[0].params.stop_token_ids = {rep0[20]};
  RunResult want = RunOneByOne(*Make(Config(false)), specs);
  auto core = Make(Config(true));
  ExpectSame(RunConcurrently(*core, specs), want, "stops");
  EXPECT_EQ(core->stats().generation_tokens_total, [&] {
    int64_t n = 0;
    for (const auto& [id, o] : want.outputs) n += static_cast<int64_t>(o.token_ids.size());
    return n;
  }());
  ExpectNoLeak(*core);
}

TEST_P(EngineSpecTest, StructuredOutputsTakeDraftsTheGrammarAllows) {
  // Constrained requests get drafts too: the grammar truncates them to what it allows,
  // each verification row is masked by the grammar advanced through the drafts before
  // it, and the grammar ends the sample where it completes. A repetitive regex gives
  // the n-gram proposer something to find; JSON and a choice ride in the same batch.
  std::vector<PromptSpec> specs = Specs(40);
  auto constrain = [](PromptSpec& spec, StructuredOutputKind kind, std::string what) {
    StructuredOutputsParams so;
    so.kind = kind;
    if (kind == StructuredOutputKind::kChoice) so.choice = {what, what + " and more"};
    else so.spec = std::move(what);
    spec.params.structured_outputs = so;
  };
  constrain(specs[0], StructuredOutputKind::kRegex, "(ab ){6,30}");
  constrain(specs[1], StructuredOutputKind::kRegex, "(x[0-9]y)+z");
  constrain(specs[2], StructuredOutputKind::kJson,
            R"({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}, "required": ["a"]})");
  constrain(specs[3], StructuredOutputKind::kChoice, "abababab abababab");
  RunResult want = RunOneByOne(*Make(Config(false)), specs);
  EngineConfig c = Config(true);
  c.speculative_config =
      R"({"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 3, "prompt_lookup_min": 1, "disable_by_batch_size": 64})";
  auto core = Make(c);
  // Grammar-forced tokens are often unlikely ones (logprobs of -10 and below), whose
  // rounding across batch sizes is larger in absolute terms: 1e-3 in f32 (measured 1.4e-4).
  ExpectSame(RunConcurrently(*core, specs), want, "structured", 1e-3f);
  auto alone = Make(c);
  ExpectSame(RunOneByOne(*alone, {specs[0], specs[1], specs[3]}), RunOneByOne(*Make(Config(false)), {specs[0], specs[1], specs[3]}),
             "structured alone", 1e-3f);
  EXPECT_GT(alone->stats().spec.num_drafts, 0) << "constrained requests got no drafts";
  EXPECT_GT(alone->stats().spec.num_accepted_tokens, 0);
  ExpectNoLeak(*core);
}

INSTANTIATE_TEST_SUITE_P(Presets, EngineSpecTest,
                         ::testing::Values(SpecParam{"qwen3-tiny", DType::kF32}, SpecParam{"qwen3-tiny", DType::kBF16},
                                           SpecParam{"qwen3-moe-tiny", DType::kF32},
                                           SpecParam{"qwen3.5-tiny", DType::kF32}, SpecParam{"qwen3.5-tiny", DType::kBF16}),
                         [](const auto& info) {
                           std::string name = std::get<0>(info.param) + (std::get<1>(info.param) == DType::kF32 ? "_f32" : "_bf16");
                           for (char& ch : name) ch = (ch == '-' || ch == '.') ? '_' : ch;
                           return name;
                         });

}  // namespace
}  // namespace pagellm::testing
