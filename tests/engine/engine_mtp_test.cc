// Speculative decoding with the checkpoint's MTP head ({"method": "mtp"}) end to end on
// the tiny hybrid presets (their dummy checkpoints ship mtp.* as the released ones do):
// greedy tokens and logprobs, and seeded samples, are the same as without speculation,
// alone and batched, with prefill chunks, hybrid prefix caching (A/B/A), n > 1 and
// preemption; the head's KV blocks all come back; a model without a head is refused.
// The heads are random here, so few drafts are accepted: what is tested is that
// nothing the head proposes changes the output, and that it is fed every step.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "backend/backend_registry.h"
#include "engine/causal_lm.h"
#include "engine_test_util.h"
#include "model/model_loader.h"
#include "spec/mtp_proposer.h"

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
  const std::vector<PromptSpec> specs = Specs(20);
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
  std::vector<PromptSpec> specs = Specs(12);
  std::vector<int32_t> long_prompt = RandomPrompt(100, 977);  // > 64: a hybrid snapshot too
  specs.push_back({"long", long_prompt, GreedyParams(12)});
  specs.push_back({"other", RandomPrompt(90, 978), GreedyParams(12)});
  specs.push_back({"long-again", long_prompt, GreedyParams(12)});  // A / B / A
  SamplingParams n2 = GreedyParams(12);
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
  std::vector<PromptSpec> specs = Specs(24);
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

// The proposer fed as the engine feeds it (a prompt chunk, then one verified row per
// step, a recompute from inside its context) drafts what the head computed in one shot
// over the whole sequence predicts: the tokens and hidden rows line up (row p = x_{p+1},
// h_p), which no output-equality test can see (drafts never change outputs).
TEST(MtpProposerTest, DraftsMatchTheHeadRunInOneShot) {
  LoadOptions load;
  load.model_path = TinyCheckpoint("qwen3.5-tiny", DType::kF32);
  load.load_mtp = true;
  LoadedModel loaded = LoadModel(load).value();
  Backend* backend = BackendRegistry::Get("cpu").value();
  std::unique_ptr<CausalLm> model = CreateCausalLm(loaded.config, loaded.weights, *backend, 256, {}).value();
  ASSERT_TRUE(model->AllocateStateSlots(1, 0).ok());
  MtpHead* head = model->mtp_head();
  ASSERT_NE(head, nullptr);
  constexpr int32_t kBlock = 16, kLen = 40;
  const int64_t h = loaded.config.hidden_size, v = loaded.config.vocab_size;
  const std::vector<int32_t> seq = RandomPrompt(kLen, 4242);
  // The target over the whole sequence: its final-normed hidden rows.
  auto kv = PagedKvCache::Create(model->MakeKvCacheSpec(8, kBlock, DType::kF32)).value();
  ModelRunner runner(*model, *kv, kBlock);
  SchedulerOutput out;
  ScheduledRequest& s = out.scheduled.emplace_back();
  s.request_id = "a";
  s.num_new_tokens = kLen;
  s.new_token_ids = seq;
  s.block_ids = {1, 2, 3};
  s.samples = true;
  s.state_slot = 0;
  ASSERT_TRUE(runner.Execute(out).ok());
  const std::vector<float> hidden(head->last_hidden().begin(), head->last_hidden().end());
  ASSERT_EQ(hidden.size(), static_cast<size_t>(kLen * h));
  // The head in one shot: rows 0..kLen-2, row p predicting x_{p+2}.
  auto mtp_kv = PagedKvCache::Create(head->MakeMtpKvCacheSpec(8, kBlock, DType::kF32)).value();
  std::vector<int32_t> tokens(seq.begin() + 1, seq.end()), positions, qsl = {0, kLen - 1}, lens = {kLen - 1};
  std::vector<int32_t> blocks = {1, 2, 3}, rows;
  std::vector<int64_t> slots;
  for (int32_t p = 0; p < kLen - 1; ++p) {
    positions.push_back(p);
    slots.push_back(int64_t{blocks[static_cast<size_t>(p / kBlock)]} * kBlock + p % kBlock);
    rows.push_back(p);
  }
  ForwardInput in{.token_ids = tokens, .positions = positions, .slot_mapping = slots, .query_start_loc = qsl,
                  .seq_lens = lens, .block_tables = blocks, .max_blocks_per_seq = 3, .logits_indices = rows, .state_slots = {}};
  std::vector<float> out_hidden(static_cast<size_t>((kLen - 1) * h)), logits(static_cast<size_t>((kLen - 1) * v));
  ASSERT_TRUE(head->ForwardMtp(in, hidden.data(), 0, *mtp_kv, out_hidden.data(), logits.data()).ok());
  auto want = [&](int32_t p) {
    const float* row = logits.data() + static_cast<size_t>(p) * v;
    return static_cast<int32_t>(std::max_element(row, row + v) - row);
  };
  auto proposer_kv = PagedKvCache::Create(head->MakeMtpKvCacheSpec(8, kBlock, DType::kF32)).value();
  MtpProposer mtp(*head, *proposer_kv,
                  {.block_size = kBlock, .num_blocks = 8, .max_num_batched_tokens = 256, .max_model_len = 2048,
                   .num_valid_tokens = static_cast<int32_t>(v), .hidden_size = h, .vocab_size = v});
  auto propose = [&](int32_t begin, int32_t rows_fed, int32_t known, int32_t k) {
    MtpSequence q{.request_id = "a", .token_ids = std::span<const int32_t>(seq).first(static_cast<size_t>(known)),
                  .hidden_begin = begin,
                  .hidden = std::span<const float>(hidden).subspan(static_cast<size_t>(begin * h),
                                                                    static_cast<size_t>(rows_fed * h)),
                  .wants_drafts = true};
    auto drafts = mtp.Propose(std::span<const MtpSequence>(&q, 1), k);
    EXPECT_TRUE(drafts.ok()) << drafts.status();
    return drafts.ok() ? (*drafts)[0] : std::vector<int32_t>{};
  };
  // A prompt chunk of 20 (x_20 known), then one row a step, with 2 drafts.
  std::vector<int32_t> d = propose(0, 20, 21, 2);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0], want(19));
  for (int32_t p = 20; p < kLen - 1; ++p) {
    d = propose(p, 1, p + 2, 2);
    ASSERT_EQ(d.size(), 2u) << p;
    EXPECT_EQ(d[0], want(p)) << "row " << p;
  }
  // A recompute from inside the context (a rejected hybrid verification is redone).
  d = propose(30, 3, 34, 1);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0], want(32));
  EXPECT_EQ(mtp.num_context_restarts(), 0);
}

TEST(EngineMtpRefusals, ModelWithoutHead) {
  EngineConfig c = TinyConfig(TinyCheckpoint("qwen3-tiny", DType::kF32), DType::kF32);
  c.speculative_config = R"({"method": "mtp", "num_speculative_tokens": 2})";
  auto dense = EngineCore::Create(c);
  ASSERT_FALSE(dense.ok());
  EXPECT_NE(dense.status().message().find("multi-token-prediction"), std::string::npos) << dense.status();
}

}  // namespace
}  // namespace pagellm::testing
