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

#include <algorithm>
#include <cmath>
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

TEST_P(EngineHybridTest, StateSlotsSizedFromMemoryCapConcurrency) {
  auto big = Make(Config());
  const int64_t slot_bytes = big->memory_plan().state_bytes_per_slot;
  const int64_t block_bytes = big->memory_plan().kv_cache_bytes / big->memory_plan().num_blocks;
  big.reset();
  // Room for 3 slots + the 8 blocks of one 128-token request (+ a bit under a slot):
  // 3 slots although --max-num-seqs is 256, no snapshot fits, so prefix caching is off.
  EngineConfig c = Config();
  c.max_model_len = 128;
  c.kv_cache_memory_bytes = 3 * slot_bytes + 8 * block_bytes + slot_bytes - 1;
  auto core = Make(c);
  const MemoryPlan& plan = core->memory_plan();
  EXPECT_EQ(plan.num_state_slots, 3);
  EXPECT_EQ(plan.num_state_snapshots, 0);
  EXPECT_EQ(plan.num_blocks, 8 + (slot_bytes - 1) / block_bytes);
  EXPECT_EQ(core->scheduler().config().batch.max_num_seqs, 3);
  EXPECT_FALSE(core->scheduler().config().kv_cache.enable_prefix_caching);
  EXPECT_NE(plan.Summary().find("state slots: 3 x"), std::string::npos) << plan.Summary();
  EXPECT_NE(plan.Summary().find("limited by memory, --max-num-seqs 256"), std::string::npos) << plan.Summary();
  std::vector<PromptSpec> specs;
  for (int32_t i = 0; i < 5; ++i) specs.push_back({fmt::format("s{}", i), RandomPrompt(6 + i, 700 + i), GreedyParams(8)});
  RunResult want = Reference(specs);
  RunResult got = RunConcurrently(*core, specs);
  EXPECT_EQ(got.max_running, 3);
  ExpectSameTokens(got, want, "3 slots");
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

// EngineStats::hybrid (the pagellm:hybrid_* metrics) in a scripted scenario. Prompts
// p0..p2 share a 70-token prefix; with 12 output tokens none reaches 128 tokens, so
// the only boundary a snapshot is taken at is 64 (interval 4 x 16-token blocks).
TEST(EngineHybridStatsTest, SnapshotCountersFollowAScriptedScenario) {
  EngineConfig c = TinyConfig(TinyCheckpoint("qwen3.5-tiny", DType::kF32), DType::kF32);
  c.max_num_seqs = 4;
  c.hybrid_state_snapshots = 2;
  auto made = EngineCore::Create(c);
  ASSERT_TRUE(made.ok()) << made.status();
  EngineCore& core = **made;
  const std::vector<PromptSpec> specs = SharedPrefixPrompts(12);
  auto expect = [&](const std::string& when, int64_t hits, int64_t tokens, int64_t saves, int64_t evictions,
                    int32_t in_use) {
    const HybridStateStats h = core.stats().hybrid;
    EXPECT_EQ(h.num_state_slots, 4) << when;
    EXPECT_EQ(h.num_state_slots_used, 0) << when;  // idle between runs
    EXPECT_EQ(h.num_snapshots, 2) << when;
    EXPECT_EQ(h.snapshot_hits, hits) << when;
    EXPECT_EQ(h.snapshot_hit_tokens, tokens) << when;
    EXPECT_EQ(h.snapshot_saves, saves) << when;
    EXPECT_EQ(h.snapshot_evictions, evictions) << when;
    EXPECT_EQ(h.num_snapshots_used, in_use) << when;
  };
  expect("start", 0, 0, 0, 0, 0);
  RunConcurrently(core, {specs[0]});  // computes 0..64 (save), then the rest
  expect("p0", 0, 0, 1, 0, 1);
  RunConcurrently(core, {specs[1], specs[2]});  // both restore the 64-token snapshot
  expect("p1+p2", 2, 128, 1, 0, 1);
  RunConcurrently(core, {{"x", RandomPrompt(80, 77), GreedyParams(4)}});  // a new prefix: 2nd entry
  expect("x", 2, 128, 2, 0, 2);
  RunConcurrently(core, {{"y", RandomPrompt(70, 78), GreedyParams(4)}});  // evicts p0's (LRU)
  expect("y", 2, 128, 3, 1, 2);
  RunConcurrently(core, {specs[0]});  // KV blocks may hit, its state does not: recompute + save
  expect("p0 again", 2, 128, 4, 2, 2);
  EXPECT_EQ(core.stats().prefix_cache_hits, 128);  // only snapshot-backed hits count
  // The scheduler's view during a run: slots held while running.
  ASSERT_TRUE(core.AddRequest("z", RandomPrompt(10, 79), GreedyParams(3), [](RequestOutput&&) {}).ok());
  ASSERT_TRUE(core.Step().ok());
  EXPECT_EQ(core.stats().hybrid.num_state_slots_used, 1);
  while (core.HasWork()) ASSERT_TRUE(core.Step().ok());
  EXPECT_EQ(core.stats().hybrid.num_state_slots_used, 0);
}

TEST(EngineHybridStatsTest, DenseModelsReportNoHybridState) {
  auto made = EngineCore::Create(TinyConfig(TinyCheckpoint(DType::kF32), DType::kF32));
  ASSERT_TRUE(made.ok()) << made.status();
  RunConcurrently(**made, {{"d", RandomPrompt(70, 5), GreedyParams(4)}});
  EXPECT_EQ((*made)->stats().hybrid.num_state_slots, 0);
  EXPECT_EQ((*made)->stats().hybrid.snapshot_saves, 0);
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
    if (interval == 0) {
      EXPECT_EQ(core->stats().prefix_cache_hits, 0);
    }
    if (interval == 2) {
      EXPECT_GT(core->stats().prefix_cache_hits, 0);  // resumed from snapshots
    }
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

// --quantization int8 on a hybrid model: W8A8 attention/GDN projections, dense MLP and
// lm_head (hybrid_model.h; MoE experts and router stay float). Logits at every prompt
// position against the same bf16 checkpoint unquantized; per position
// max|delta| / max|logit| and top-1 agreement, as in tests/conformance/
// int8_fidelity_test.cc (qwen3-tiny W8A8 measured 0.107 there, bound 0.2).
// Measured on qwen3.5-tiny: max 0.141, top-1 38/40, 16/16 greedy tokens equal. On
// qwen3.5-moe-tiny a few positions flip a routing decision (the router sees int8-noised
// hidden states), which moves those logits by ~max|logit|: max 1.10, median 0.130,
// top-1 35/40, 15/16 greedy tokens equal; there the bound is on the median and top-1.
struct LogitFidelity {
  double max_rel_delta = 0;
  double median_rel_delta = 0;
  int32_t top1_agree = 0;
};

LogitFidelity CompareLogits(const std::vector<float>& got, const std::vector<float>& want, int64_t vocab) {
  LogitFidelity f;
  std::vector<double> rel;
  for (size_t row = 0; row * vocab < want.size(); ++row) {
    const float* g = got.data() + row * vocab;
    const float* w = want.data() + row * vocab;
    double scale = 0, delta = 0;
    for (int64_t v = 0; v < vocab; ++v) {
      scale = std::max(scale, double(std::abs(w[v])));
      delta = std::max(delta, double(std::abs(g[v] - w[v])));
    }
    rel.push_back(delta / scale);
    f.top1_agree += std::max_element(g, g + vocab) - g == std::max_element(w, w + vocab) - w;
  }
  std::sort(rel.begin(), rel.end());
  f.max_rel_delta = rel.back();
  f.median_rel_delta = rel[rel.size() / 2];
  return f;
}

TEST(EngineHybridInt8Test, W8A8LogitsTrackBf16AndTheEngineGenerates) {
  for (const bool moe : {false, true}) {
    const std::string preset = moe ? "qwen3.5-moe-tiny" : "qwen3.5-tiny";
    EngineConfig c = TinyConfig(TinyCheckpoint(preset, DType::kBF16), DType::kBF16);
    auto bf16 = EngineCore::Create(c);
    c.quantization = "int8";
    auto int8 = EngineCore::Create(c);
    ASSERT_TRUE(bf16.ok() && int8.ok()) << bf16.status() << int8.status();
    const std::vector<int32_t> prompt = RandomPrompt(40, 600);
    auto want = (*bf16)->ScorePrompt(prompt);
    auto got = (*int8)->ScorePrompt(prompt);
    ASSERT_TRUE(want.ok() && got.ok()) << want.status() << got.status();
    const LogitFidelity f = CompareLogits(*got, *want, (*bf16)->model_config().vocab_size);
    std::printf("%s int8 vs bf16: max|delta|/max|logit| max %.4f median %.4f, top-1 agree %d/40\n", preset.c_str(),
                f.max_rel_delta, f.median_rel_delta, f.top1_agree);
    EXPECT_LE(moe ? f.median_rel_delta : f.max_rel_delta, 0.2) << preset;
    EXPECT_GE(f.top1_agree, moe ? 34 : 36) << preset;
    EXPECT_GT(f.median_rel_delta, 1e-4) << preset;  // not vacuous: the weights really are int8

    const std::vector<PromptSpec> specs = {{"g", RandomPrompt(24, 601), GreedyParams(16)}};
    const RunResult ref = RunConcurrently(**bf16, specs);
    const RunResult q = RunConcurrently(**int8, specs);
    const std::vector<int32_t>& a = ref.outputs.at("g").token_ids;
    const std::vector<int32_t>& b = q.outputs.at("g").token_ids;
    ASSERT_EQ(b.size(), 16u) << preset;
    size_t same = 0;
    while (same < a.size() && a[same] == b[same]) ++same;
    std::printf("%s int8 greedy: first %zu of 16 tokens equal to bf16\n", preset.c_str(), same);
    // Greedy runs diverge for good at the first flipped token, and the random MoE preset's
    // routing has near-ties: measured 8+ of 16 with oneDNN's VNNI int8 matmul (AVX-512),
    // 5 of 16 with the int8 GEMV on an AVX2-only Zen 3 while its logits met the bounds above
    // (top-1 34/40). The logit checks are the fidelity test; this one checks that the MoE
    // engine generates with W8A8 and starts out on the bf16 path.
    EXPECT_GE(same, moe ? 4u : 8u) << preset;
  }
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
