// Delta-rule kernels: SIMD recurrent and chunked forms (each ISA) against the scalar
// reference, initial states, and state continuation across calls.
#include "model/hybrid/gdn_delta_rule.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdio>
#include <vector>

#include "model/hybrid/gdn_test_util.h"

namespace pagellm {
namespace {

constexpr float kTol = 1e-4f;  // §7: chunked vs recurrent, fp32, T <= 1024

const GdnDims kSmall{.num_k_heads = 2, .num_v_heads = 4, .k_head_dim = 32, .v_head_dim = 48};

struct RunResult {
  std::vector<float> out, state;
};

RunResult RunReference(const GdnTestData& d, const std::vector<float>& init_state) {
  RunResult r{std::vector<float>(d.num_tokens * d.dims.value_dim()), init_state};
  GdnRecurrentReference(d.dims, d.inputs(), r.state.data(), r.out.data());
  return r;
}

std::vector<float> InitialState(const GdnDims& dims, bool nonzero, uint32_t seed) {
  return nonzero ? RandomUniform(dims.state_floats(), seed, -1.0f, 1.0f)
                 : std::vector<float>(dims.state_floats(), 0.0f);
}

void ExpectClose(const RunResult& got, const RunResult& want, const std::string& what) {
  const float out_err = MaxAbsDiff(got.out, want.out), state_err = MaxAbsDiff(got.state, want.state);
  EXPECT_LE(out_err, kTol) << what << " outputs";
  EXPECT_LE(state_err, kTol) << what << " final state";
  EXPECT_GT(MaxAbs(want.out), 1e-3f) << what << ": degenerate reference";
  std::printf("  %-44s max|d out| %.2e  max|d state| %.2e\n", what.c_str(), out_err, state_err);
}

TEST(GdnDeltaRuleTest, ChunkedMatchesReferenceAcrossLengthsAndIsas) {
  for (CpuIsa isa : SupportedIsas()) {
    for (int64_t len : {1, 63, 64, 65, 200, 1000}) {
      for (bool init : {false, true}) {
        const GdnTestData d = MakeRandomGdnData(kSmall, len, 100 + len);
        const std::vector<float> s0 = InitialState(kSmall, init, 7);
        const RunResult want = RunReference(d, s0);
        RunResult got{std::vector<float>(want.out.size(), -1.0f), s0};
        RunChunkedWithIsa(isa, kSmall, d.inputs(), got.state.data(), got.out.data());
        ExpectClose(got, want, fmt::format("chunked {} T={} init={}", CpuIsaName(isa), len, init));
      }
    }
  }
}

TEST(GdnDeltaRuleTest, SmallerChunkSizesGiveTheSameResult) {
  for (CpuIsa isa : SupportedIsas()) {
    for (int64_t chunk : {16, 32}) {
      for (int64_t len : {chunk - 1, chunk, chunk + 1, 3 * chunk + 5}) {
        const GdnTestData d = MakeRandomGdnData(kSmall, len, 300 + len);
        const std::vector<float> s0 = InitialState(kSmall, true, 17);
        const RunResult want = RunReference(d, s0);
        RunResult got{std::vector<float>(want.out.size(), -1.0f), s0};
        RunChunkedWithIsa(isa, kSmall, d.inputs(), got.state.data(), got.out.data(), chunk);
        ExpectClose(got, want, fmt::format("chunk {} {} T={}", chunk, CpuIsaName(isa), len));
      }
    }
  }
}

TEST(GdnDeltaRuleTest, RecurrentSimdMatchesReference) {
  for (CpuIsa isa : SupportedIsas()) {
    for (bool init : {false, true}) {
      const GdnTestData d = MakeRandomGdnData(kSmall, 70, 5, -8.0f);
      const std::vector<float> s0 = InitialState(kSmall, init, 8);
      const RunResult want = RunReference(d, s0);
      RunResult got{std::vector<float>(want.out.size()), s0};
      RunRecurrentWithIsa(isa, kSmall, d.inputs(), got.state.data(), got.out.data());
      ExpectClose(got, want, fmt::format("recurrent {} init={}", CpuIsaName(isa), init));
    }
  }
}

TEST(GdnDeltaRuleTest, QwenShapesStrongAndWeakDecayTiledMapping) {
  GdnDims dims{.num_k_heads = 1, .num_v_heads = 2, .k_head_dim = 128, .v_head_dim = 128};
  for (GdnHeadMapping mapping : {GdnHeadMapping::kGrouped, GdnHeadMapping::kTiled}) {
    dims.head_mapping = mapping;
    dims.num_k_heads = mapping == GdnHeadMapping::kTiled ? 2 : 1;
    dims.num_v_heads = 4;
    for (float g_min : {-8.0f, -0.05f}) {
      const GdnTestData d = MakeRandomGdnData(dims, 150, 11, g_min);
      const std::vector<float> s0 = InitialState(dims, true, 9);
      const RunResult want = RunReference(d, s0);
      std::vector<float> scratch(GdnChunkedScratchFloats(dims) * GdnMaxThreads());
      RunResult chunked{std::vector<float>(want.out.size()), s0}, recurrent = chunked;
      GdnChunked(dims, d.inputs(), chunked.state.data(), chunked.out.data(), scratch);
      GdnRecurrent(dims, d.inputs(), recurrent.state.data(), recurrent.out.data());
      const std::string tag = fmt::format("dk=dv=128 g_min={} tiled={}", g_min, mapping == GdnHeadMapping::kTiled);
      ExpectClose(chunked, want, "chunked " + tag);
      ExpectClose(recurrent, want, "recurrent " + tag);
    }
  }
}

TEST(GdnDeltaRuleTest, HeadMappingMatters) {
  // Grouped and tiled mappings differ once nv > nk > 1: the test data must see it.
  GdnDims grouped{.num_k_heads = 2, .num_v_heads = 4, .k_head_dim = 16, .v_head_dim = 16};
  GdnDims tiled = grouped;
  tiled.head_mapping = GdnHeadMapping::kTiled;
  EXPECT_EQ(grouped.KeyHeadOf(1), 0);
  EXPECT_EQ(tiled.KeyHeadOf(1), 1);
  const GdnTestData d = MakeRandomGdnData(grouped, 5, 3);
  std::vector<float> s1(grouped.state_floats()), s2 = s1, o1(5 * grouped.value_dim()), o2 = o1;
  GdnRecurrentReference(grouped, d.inputs(), s1.data(), o1.data());
  GdnRecurrentReference(tiled, d.inputs(), s2.data(), o2.data());
  EXPECT_GT(MaxAbsDiff(o1, o2), 1e-3f);
}

TEST(GdnDeltaRuleTest, ChunkedPrefillContinuesAcrossCalls) {
  const GdnTestData d = MakeRandomGdnData(kSmall, 137, 21);
  const std::vector<float> s0 = InitialState(kSmall, true, 3);
  std::vector<float> scratch(GdnChunkedScratchFloats(kSmall) * GdnMaxThreads());
  RunResult whole{std::vector<float>(137 * kSmall.value_dim()), s0}, split = whole;
  GdnChunked(kSmall, d.inputs(), whole.state.data(), whole.out.data(), scratch);
  GdnChunked(kSmall, d.inputs(0, 100), split.state.data(), split.out.data(), scratch);
  GdnChunked(kSmall, d.inputs(100, 37), split.state.data(), split.out.data() + 100 * kSmall.value_dim(), scratch);
  ExpectClose(split, whole, "prefill 100 + 37 vs 137");
  ExpectClose(whole, RunReference(d, s0), "prefill 137 vs reference");
}

TEST(GdnDeltaRuleTest, PrefillThenDecodeEqualsLongerPrefill) {
  const int64_t n = 90, m = 12, vd = kSmall.value_dim();
  const GdnTestData d = MakeRandomGdnData(kSmall, n + m, 31);
  std::vector<float> scratch(GdnChunkedScratchFloats(kSmall) * GdnMaxThreads());
  RunResult whole{std::vector<float>((n + m) * vd), std::vector<float>(kSmall.state_floats(), 0.0f)};
  RunResult steps = whole;
  GdnChunked(kSmall, d.inputs(), whole.state.data(), whole.out.data(), scratch);
  GdnChunked(kSmall, d.inputs(0, n), steps.state.data(), steps.out.data(), scratch);
  for (int64_t t = n; t < n + m; ++t) {
    GdnRecurrent(kSmall, d.inputs(t, 1), steps.state.data(), steps.out.data() + t * vd);
  }
  ExpectClose(steps, whole, "prefill 90 + decode 12 vs prefill 102");
}

TEST(GdnDeltaRuleTest, DecodeBatchEqualsPerSequenceDecode) {
  const int64_t num_seqs = 3, vd = kSmall.value_dim();
  const GdnTestData d = MakeRandomGdnData(kSmall, num_seqs, 41);  // row s = sequence s
  std::vector<std::vector<float>> states, expect_states;
  std::vector<float> expect_out(num_seqs * vd), out(num_seqs * vd);
  for (int64_t s = 0; s < num_seqs; ++s) {
    states.push_back(RandomUniform(kSmall.state_floats(), 50 + s, -1.0f, 1.0f));
    expect_states.push_back(states.back());
    GdnRecurrentReference(kSmall, d.inputs(s, 1), expect_states[s].data(), expect_out.data() + s * vd);
  }
  std::vector<float*> ptrs;
  for (auto& s : states) ptrs.push_back(s.data());
  GdnDecodeBatch(kSmall, d.inputs(), ptrs, out.data());
  EXPECT_LE(MaxAbsDiff(out, expect_out), kTol);
  for (int64_t s = 0; s < num_seqs; ++s) EXPECT_LE(MaxAbsDiff(states[s], expect_states[s]), kTol) << s;
}

TEST(GdnDeltaRuleTest, ValidateDims) {
  EXPECT_TRUE(ValidateGdnDims(kSmall).ok());
  EXPECT_FALSE(ValidateGdnDims({.num_k_heads = 3, .num_v_heads = 4, .k_head_dim = 16, .v_head_dim = 16}).ok());
  EXPECT_FALSE(ValidateGdnDims({.num_k_heads = 1, .num_v_heads = 1, .k_head_dim = 24, .v_head_dim = 16}).ok());
  EXPECT_FALSE(ValidateGdnDims({.num_k_heads = 1, .num_v_heads = 1, .k_head_dim = 16, .v_head_dim = 512}).ok());
  EXPECT_FALSE(ValidateGdnDims({.num_k_heads = 0, .num_v_heads = 1, .k_head_dim = 16, .v_head_dim = 16}).ok());
}

}  // namespace
}  // namespace pagellm
