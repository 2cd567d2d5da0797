// End-to-end engine tests on tiny dummy hybrid checkpoints (Qwen3.5 dense, Qwen3.5 MoE,
// Qwen3-Next): full-attention layers on paged KV blocks, Gated DeltaNet layers on
// per-sequence state slots. Greedy decoding must give the same tokens whether a request
// runs alone, batched, in prefill chunks of several sizes, after preemption (which
// restarts its state from position 0 or from a snapshot), or from the prefix cache
// (KV blocks + a GDN state snapshot at a snapshot boundary), and no KV block or state
// slot may leak.
//
// NOTE on numerics: as in engine_e2e_test.cc, batches of > 4 rows use oneDNN and GDN
// prefill uses the chunked delta rule while decode is recurrent, so logits differ in
// the last bits between schedules. f32 weights + KV must give identical tokens and
// logprobs to ~1e-3; bf16 identical tokens.
#include <gtest/gtest.h>

#include <cstdio>
#include <ostream>
#include <tuple>

#include <fmt/format.h>

#include "engine_test_util.h"

namespace pagellm::testing {
namespace {

using HybridParam = std::tuple<std::string, DType>;

class EngineHybridTest : public ::testing::TestWithParam<HybridParam> {
 protected:
  const std::string& preset() const { return std::get<0>(GetParam()); }
  DType dtype() const { return std::get<1>(GetParam()); }
  EngineConfig Config() const { return TinyConfig(TinyCheckpoint(preset(), dtype()), dtype()); }
  std::unique_ptr<EngineCore> Make(const EngineConfig& c) const {
    auto core = EngineCore::Create(c);
    if (!core.ok()) std::fprintf(stderr, "EngineCore::Create: %s\n", core.status().ToString().c_str());
    PAGELLM_CHECK(core.ok());
    return std::move(*core);
  }
  // Each request alone, prefix caching (and so snapshots and chunk cuts) off.
  RunResult Reference(const std::vector<PromptSpec>& specs) const {
    EngineConfig c = Config();
    c.enable_prefix_caching = false;
    return RunOneByOne(*Make(c), specs);
  }

  void ExpectSameTokens(const RunResult& got, const RunResult& want, const std::string& what) const {
    ASSERT_EQ(got.outputs.size(), want.outputs.size()) << what;
    float tolerance = dtype() == DType::kF32 ? 1e-3f : 0.25f;
    for (const auto& [id, w] : want.outputs) {
      const SampleOutput& g = got.outputs.at(id);
      EXPECT_EQ(g.token_ids, w.token_ids) << what << ": request " << id;
      EXPECT_EQ(g.finish_reason, w.finish_reason) << what << ": request " << id;
      EXPECT_EQ(g.num_deltas_after_finish, 0) << id;
      EXPECT_LE(MaxLogprobDiff(g.logprobs, w.logprobs), tolerance) << what << ": request " << id;
    }
  }
  static void ExpectNoLeak(const EngineCore& core) {
    EXPECT_FALSE(core.HasWork());
    EXPECT_EQ(core.scheduler().kv_cache().num_free_blocks(), core.memory_plan().num_blocks);
    EXPECT_EQ(core.scheduler().kv_cache().num_requests(), 0);
    EXPECT_EQ(core.scheduler().state_slots().num_free_slots(), core.memory_plan().num_state_slots);
  }
};

std::vector<PromptSpec> MixedPrompts(int32_t max_tokens) {
  std::vector<PromptSpec> specs;
  int32_t lengths[] = {1, 7, 16, 33, 70};
  for (int32_t i = 0; i < 5; ++i) {
    specs.push_back({fmt::format("r{}", i), RandomPrompt(lengths[i], 100 + i), GreedyParams(max_tokens)});
  }
  return specs;
}

TEST_P(EngineHybridTest, MemoryPlanCountsStateSlotsAndSnapshots) {
  EngineConfig c = Config();
  c.max_num_seqs = 8;
  c.hybrid_state_snapshots = 5;
  auto core = Make(c);
  const MemoryPlan& plan = core->memory_plan();
  EXPECT_EQ(plan.num_state_slots, 8);
  EXPECT_EQ(plan.num_state_snapshots, 5);
  EXPECT_GT(plan.state_bytes_per_slot, 0);
  EXPECT_EQ(plan.state_cache_bytes(), 13 * plan.state_bytes_per_slot);
  EXPECT_LE(plan.kv_cache_bytes + plan.state_cache_bytes(), c.kv_cache_memory_bytes);
  EXPECT_NE(plan.Summary().find("state slots: 8 x"), std::string::npos) << plan.Summary();
  EXPECT_NE(plan.Summary().find("5 prefix-cache state snapshots (every 4 blocks)"), std::string::npos) << plan.Summary();
  EXPECT_EQ(core->scheduler().state_slots().num_slots(), 8);
  EXPECT_TRUE(core->scheduler().snapshots_enabled());

  // Interval 0: no snapshots, so prefix caching is off (a hit would skip GDN state).
  c.hybrid_state_snapshot_interval = 0;
  core = Make(c);
  EXPECT_EQ(core->memory_plan().num_state_snapshots, 0);
  EXPECT_FALSE(core->scheduler().config().kv_cache.enable_prefix_caching);
  std::vector<int32_t> prompt = RandomPrompt(80, 9);
  RunResult first = RunConcurrently(*core, {{"a", prompt, GreedyParams(8)}});
  RunResult second = RunConcurrently(*core, {{"b", prompt, GreedyParams(8)}});
  EXPECT_EQ(core->stats().prefix_cache_hits, 0);
  EXPECT_EQ(second.outputs.at("b").num_cached_tokens, 0);
  EXPECT_EQ(second.outputs.at("b").token_ids, first.outputs.at("a").token_ids);
  ExpectNoLeak(*core);
}

// Prompts sharing a 70-token prefix: with a snapshot every 4 blocks (64 tokens) the
// later ones hit 64 tokens (KV + restored GDN state), never the 4th..5th partial ones.
std::vector<PromptSpec> SharedPrefixPrompts(int32_t max_tokens) {
  std::vector<int32_t> prefix = RandomPrompt(70, 7);
  std::vector<PromptSpec> specs;
  int32_t suffix_lengths[] = {5, 17, 40};
  for (int32_t i = 0; i < 3; ++i) {
    std::vector<int32_t> ids = prefix;
    std::vector<int32_t> suffix = RandomPrompt(suffix_lengths[i], 200 + i);
    ids.insert(ids.end(), suffix.begin(), suffix.end());
    specs.push_back({fmt::format("p{}", i), ids, GreedyParams(max_tokens)});
  }
  return specs;
}

TEST_P(EngineHybridTest, PrefixHitsRestoreStateSnapshotsAndSkipCompute) {
  std::vector<PromptSpec> specs = SharedPrefixPrompts(24);
  RunResult want = Reference(specs);
  for (int32_t chunk : {2048, 5, 16, 33}) {
    EngineConfig c = Config();
    c.max_num_batched_tokens = chunk;
    c.long_prefill_token_threshold = chunk;
    auto core = Make(c);
    RunResult first = RunConcurrently(*core, {specs[0]});
    EXPECT_EQ(first.outputs.at("p0").num_cached_tokens, 0);
    int64_t hits_before = core->stats().prefix_cache_hits;
    RunResult rest = RunConcurrently(*core, {specs[1], specs[2]});
    EXPECT_EQ(core->stats().prefix_cache_hits - hits_before, 2 * 64) << "chunk " << chunk;
    int64_t expected_computed = 0;  // prompt + outputs - last sampled token - hits
    for (int32_t i = 1; i < 3; ++i) {
      EXPECT_EQ(rest.outputs.at(specs[i].id).num_cached_tokens, 64) << "chunk " << chunk;
      expected_computed += static_cast<int64_t>(specs[i].prompt_token_ids.size()) + 24 - 1 - 64;
    }
    EXPECT_EQ(rest.num_computed_tokens, expected_computed) << "chunk " << chunk;
    rest.outputs.insert(first.outputs.begin(), first.outputs.end());
    ExpectSameTokens(rest, want, fmt::format("prefix cache, chunk {}", chunk));
    ExpectNoLeak(*core);
  }
}

TEST_P(EngineHybridTest, EvictedSnapshotsFallBackToShallowerOnesOrRecompute) {
  // One snapshot entry: each new 64-token boundary evicts the previous one.
  EngineConfig c = Config();
  c.hybrid_state_snapshots = 1;
  std::vector<PromptSpec> specs = SharedPrefixPrompts(12);
  PromptSpec other{"other", RandomPrompt(80, 77), GreedyParams(12)};
  RunResult want = Reference({specs[0], specs[1], other});
  auto core = Make(c);
  RunResult got = RunConcurrently(*core, {specs[0]});
  RunResult o = RunConcurrently(*core, {other});  // evicts p0's snapshot
  RunResult p1 = RunConcurrently(*core, {specs[1]});
  EXPECT_EQ(p1.outputs.at("p1").num_cached_tokens, 0);  // KV blocks cached, state not: recompute
  EXPECT_GT(core->scheduler().state_snapshots().num_evictions(), 0);
  got.outputs.insert(o.outputs.begin(), o.outputs.end());
  got.outputs.insert(p1.outputs.begin(), p1.outputs.end());
  ExpectSameTokens(got, want, "evicted snapshots");
  ExpectNoLeak(*core);
}

TEST_P(EngineHybridTest, ConcurrentRequestsMatchEachAlone) {
  std::vector<PromptSpec> specs = MixedPrompts(24);
  RunResult want = Reference(specs);
  auto core = Make(Config());
  RunResult got = RunConcurrently(*core, specs);
  EXPECT_EQ(got.max_running, 5);
  ExpectSameTokens(got, want, "concurrent");
  for (const auto& [id, o] : got.outputs) EXPECT_EQ(o.token_ids.size(), 24u) << id;
  ExpectNoLeak(*core);
}

TEST_P(EngineHybridTest, ChunkedPrefillCarriesStateAcrossChunks) {
  std::vector<PromptSpec> specs;
  int32_t lengths[] = {70, 41, 9};
  for (int32_t i = 0; i < 3; ++i) specs.push_back({fmt::format("c{}", i), RandomPrompt(lengths[i], 300 + i), GreedyParams(16)});
  RunResult want = Reference(specs);
  for (int32_t chunk : {5, 16, 33}) {
    EngineConfig c = Config();
    c.max_num_batched_tokens = chunk;
    c.long_prefill_token_threshold = chunk;
    auto core = Make(c);
    RunResult got = RunConcurrently(*core, specs);
    EXPECT_GE(got.num_steps, (120 + chunk - 1) / chunk) << "chunk " << chunk;
    ExpectSameTokens(got, want, fmt::format("chunk {}", chunk));
    ExpectNoLeak(*core);
  }
}

TEST_P(EngineHybridTest, PreemptionRestartsStateOrResumesFromSnapshots) {
  auto big = Make(Config());
  int64_t bytes_per_block = big->memory_plan().kv_cache_bytes / big->memory_plan().num_blocks;
  big.reset();
  std::vector<PromptSpec> specs;
  int32_t lengths[] = {20, 25, 30, 35};
  for (int32_t i = 0; i < 4; ++i) specs.push_back({fmt::format("q{}", i), RandomPrompt(lengths[i], 400 + i), GreedyParams(40)});
  PromptSpec doomed{"aborted", RandomPrompt(18, 499), GreedyParams(40)};
  std::vector<PromptSpec> all = specs;
  all.push_back(doomed);
  const RunResult want = Reference(all);

  // Interval 0: no snapshots, a preempted request recomputes from position 0 (slot
  // reset). Interval 2: it resumes from the snapshot of its deepest cached boundary
  // (preemption happens at a block boundary, so an interval of 1 would let a reused
  // slot hold the right state by chance and hide a missing restore).
  for (int32_t interval : {0, 2}) {
    EngineConfig c = Config();
    c.max_num_seqs = 6;
    c.hybrid_state_snapshot_interval = interval;
    c.hybrid_state_snapshots = 16;
    auto sized = Make(c);  // state bytes for 6 slots (+ snapshots) come out of the same budget
    int64_t state_bytes = sized->memory_plan().state_cache_bytes();
    sized.reset();
    c.kv_cache_memory_bytes = 10 * bytes_per_block + state_bytes;  // 160 tokens; the requests need ~330
    c.max_model_len = 128;
    auto core = Make(c);
    ASSERT_EQ(core->memory_plan().num_blocks, 10);
    RunResult got = RunConcurrently(*core, all, [&](int64_t step) {
      if (step == 30) core->AbortRequest("aborted");
    });
    EXPECT_GT(core->stats().num_preemptions_total, 0);
    if (interval == 0) EXPECT_EQ(core->stats().prefix_cache_hits, 0);
    if (interval == 2) EXPECT_GT(core->stats().prefix_cache_hits, 0);  // resumed from snapshots
    const SampleOutput& aborted = got.outputs.at("aborted");
    EXPECT_EQ(aborted.finish_reason, "abort");
    EXPECT_LT(aborted.token_ids.size(), 40u);
    std::vector<int32_t> want_prefix(want.outputs.at("aborted").token_ids.begin(),
                                     want.outputs.at("aborted").token_ids.begin() + aborted.token_ids.size());
    EXPECT_EQ(aborted.token_ids, want_prefix);
    got.outputs.erase("aborted");
    RunResult want_rest = want;
    want_rest.outputs.erase("aborted");
    ExpectSameTokens(got, want_rest, fmt::format("preemption, snapshot interval {}", interval));
    ExpectNoLeak(*core);
  }
}

TEST_P(EngineHybridTest, NSamplesEachGetTheirOwnState) {
  std::vector<int32_t> prompt = RandomPrompt(40, 500);
  SamplingParams params = GreedyParams(12);
  params.n = 3;
  RunResult want = Reference({{"one", prompt, GreedyParams(12)}});
  auto core = Make(Config());
  RunResult got = RunConcurrently(*core, {{"multi", prompt, params}});
  ASSERT_EQ(got.outputs.size(), 3u);
  for (int32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(got.outputs.at(fmt::format("multi#{}", i)).token_ids, want.outputs.at("one").token_ids) << i;
  }
  ExpectNoLeak(*core);
}

std::string ParamName(const ::testing::TestParamInfo<HybridParam>& info) {
  std::string name = std::get<0>(info.param) + (std::get<1>(info.param) == DType::kF32 ? "_f32" : "_bf16");
  for (char& ch : name) {
    if (ch == '.' || ch == '-') ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Presets, EngineHybridTest,
                         ::testing::Values(HybridParam{"qwen3.5-tiny", DType::kF32},
                                           HybridParam{"qwen3.5-tiny", DType::kBF16},
                                           HybridParam{"qwen3.5-moe-tiny", DType::kF32},
                                           HybridParam{"qwen3-next-tiny", DType::kF32}),
                         ParamName);

}  // namespace
}  // namespace pagellm::testing
