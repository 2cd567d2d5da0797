// StepCostModel and PrefillTokenCap with injected step times (no clocks, no timing
// assertions): the fit must recover a known cost line, and the cap must follow the
// formulas in step_cost_model.h, worked out by hand below.
#include "engine/step_cost_model.h"

#include <cmath>

#include <gtest/gtest.h>

namespace pagellm {
namespace {

// The "machine": 0.2 s per step plus 6 ms per token (a CPU at ~160 prefill tokens/s).
constexpr double kFixedS = 0.2;
constexpr double kPerTokenS = 0.006;
double TrueSeconds(int32_t num_tokens) { return kFixedS + kPerTokenS * num_tokens; }

StepCostModel Trained(std::initializer_list<int32_t> step_sizes) {
  StepCostModel cost;
  for (int32_t n : step_sizes) cost.Observe(n, TrueSeconds(n));
  return cost;
}

TEST(StepCostModelTest, RecoversFixedAndPerTokenCostFromMixedSteps) {
  StepCostModel cost = Trained({2048, 16, 16, 528, 100, 16, 80, 16});
  EXPECT_NEAR(cost.fixed_s(), kFixedS, 1e-9);
  EXPECT_NEAR(cost.per_token_s(), kPerTokenS, 1e-12);
  EXPECT_NEAR(cost.PredictSeconds(300), TrueSeconds(300), 1e-9);
}

TEST(StepCostModelTest, EqualStepsGiveAProportionalEstimateThatOverstatesTheCost) {
  StepCostModel cost = Trained({16, 16, 16});
  EXPECT_NEAR(cost.fixed_s(), 0.0, 1e-12);
  EXPECT_NEAR(cost.per_token_s(), TrueSeconds(16) / 16, 1e-12);  // 18.5 ms > 6 ms
  EXPECT_NEAR(cost.PredictSeconds(16), TrueSeconds(16), 1e-12);   // exact where measured
}

TEST(StepCostModelTest, KeepsTheSlopeAndFollowsALoadChangeDuringEqualSteps) {
  StepCostModel cost = Trained({512, 16, 300, 16});
  ASSERT_NEAR(cost.per_token_s(), kPerTokenS, 1e-12);
  // The machine gets 0.1 s slower per step; only 16-token steps are seen from now on.
  for (int i = 0; i < 200; ++i) cost.Observe(16, TrueSeconds(16) + 0.1);
  EXPECT_NEAR(cost.PredictSeconds(16), TrueSeconds(16) + 0.1, 1e-6);
  EXPECT_GT(cost.per_token_s(), 0.0);
}

TEST(StepCostModelTest, SmallerMinimumSpreadTellsOneTokenFromFiveTokenSteps) {
  // Decode-only steps of one sequence, with and without 4 drafts: 1 and 5 tokens.
  StepCostModel coarse, fine(0.9, /*min_spread_tokens=*/1.0);
  for (int32_t n : {5, 1, 5, 1, 5}) {
    coarse.Observe(n, TrueSeconds(n));
    fine.Observe(n, TrueSeconds(n));
  }
  EXPECT_FALSE(coarse.has_slope());  // 2 tokens apart is below the default 4
  ASSERT_TRUE(fine.has_slope());
  EXPECT_NEAR(fine.fixed_s(), kFixedS, 1e-9);
  EXPECT_NEAR(fine.per_token_s(), kPerTokenS, 1e-12);
}

TEST(StepCostModelTest, IgnoresBrokenMeasurements) {
  StepCostModel cost;
  cost.Observe(16, -1.0);
  cost.Observe(16, std::nan(""));
  EXPECT_FALSE(cost.has_observations());
}

TEST(PrefillTokenCapTest, NoCapWithoutDecodesWithoutDataOrWhenOff) {
  StepCostModel cost = Trained({2048, 16, 528, 16});
  EXPECT_EQ(PrefillTokenCap(cost, {.num_decodes = 0, .num_prefilling = 5}, 0.0), 0);
  EXPECT_EQ(PrefillTokenCap(StepCostModel(), {.num_decodes = 4, .num_prefilling = 1}, 0.0), 0);
  EXPECT_EQ(PrefillTokenCap(cost, {.num_decodes = 4, .num_prefilling = 1}, -1.0), 0);
}

TEST(PrefillTokenCapTest, AutoTargetDoublesTheDecodeStepAtMost) {
  StepCostModel cost = Trained({2048, 16, 528, 16, 100});
  // 16 decodes alone: 0.2 + 16 * 0.006 = 0.296 s; target 0.592 s; the prefill may use
  // 0.296 s = 49.33 tokens -> 49.
  EXPECT_EQ(PrefillTokenCap(cost, {.num_decodes = 16, .num_prefilling = 1}, 0.0), 49);
  EXPECT_EQ(PrefillTokenCap(cost, {.num_decodes = 16, .num_prefilling = 16}, 0.0), 49);
  // More requests wait for their first token than decode: 10 / 4 = 2.5 decode steps of
  // prefill: 2.5 * (0.2 + 4 * 0.006) / 0.006 = 93.33 -> 93.
  EXPECT_EQ(PrefillTokenCap(cost, {.num_decodes = 4, .num_prefilling = 10}, 0.0), 93);
}

TEST(PrefillTokenCapTest, ExplicitLatencyTarget) {
  StepCostModel cost = Trained({2048, 16, 528, 16, 100});
  // (1.0 - 0.296) / 0.006 = 117.3 -> 117.
  EXPECT_EQ(PrefillTokenCap(cost, {.num_decodes = 16, .num_prefilling = 1}, 1.0), 117);
  // A target the decodes alone exceed still lets prompts progress (the scheduler
  // raises 1 to a block).
  EXPECT_EQ(PrefillTokenCap(cost, {.num_decodes = 16, .num_prefilling = 1}, 0.1), 1);
}

}  // namespace
}  // namespace pagellm
