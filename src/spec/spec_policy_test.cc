#include "spec/spec_policy.h"

#include <vector>

#include <gtest/gtest.h>

namespace pagellm {
namespace {

// A CPU-like step: 40 ms to read the weights, 2 ms per token.
constexpr double kFixed = 0.040, kPerToken = 0.002;

TEST(SpecPolicyTest, OnWhileMemoryBoundOffWhenComputeBound) {
  SpecPolicy policy({.num_speculative_tokens = 4});
  policy.Observe(1, 1);  // 1 of 4 drafts accepted on average
  EXPECT_EQ(policy.DraftsPerRequest(1, kFixed, kPerToken, 0.0), 4);   // 2 x 42 ms > 1.05 x 50 ms
  EXPECT_EQ(policy.DraftsPerRequest(16, kFixed, kPerToken, 0.0), 0);  // 2 x 72 ms < 1.05 x 200 ms
}

TEST(SpecPolicyTest, DraftModelCostCounts) {
  SpecPolicy policy({.num_speculative_tokens = 4});
  policy.Observe(1, 3);  // 3 of 4 accepted: 4 x 42 ms = 168 ms of plain steps
  // A draft model a tenth of the target: 4 x 4.2 ms drafting, 1.05 x (50 + 16.8) ms < 168 ms.
  EXPECT_EQ(policy.DraftsPerRequest(1, kFixed, kPerToken, 4 * 0.0042), 4);
  // A draft as large as the target: 1.05 x (50 + 168) ms > 168 ms.
  EXPECT_EQ(policy.DraftsPerRequest(1, kFixed, kPerToken, 4 * 0.042), 0);
}

TEST(SpecPolicyTest, LowAcceptanceTurnsItOffButProbes) {
  SpecPolicy policy({.num_speculative_tokens = 4});
  for (int i = 0; i < 200; ++i) policy.Observe(1, 0);
  int on = 0;
  for (int i = 0; i < 64; ++i) on += policy.DraftsPerRequest(1, kFixed, kPerToken, 0.0) > 0;
  EXPECT_EQ(on, 2);  // one probing step in 32
  // Acceptance comes back: the probes see it and speculation resumes.
  for (int i = 0; i < 100; ++i) policy.Observe(1, 4);
  EXPECT_EQ(policy.DraftsPerRequest(1, kFixed, kPerToken, 0.0), 4);
}

TEST(SpecPolicyTest, WithoutASlopeStepsAlternateDraftsFirst) {
  SpecPolicy policy({.num_speculative_tokens = 4});
  EXPECT_EQ(policy.DraftsPerRequest(2, 0.004, 0.0, 0.0), 4);
  EXPECT_EQ(policy.DraftsPerRequest(2, 0.004, 0.0, 0.0), 0);  // measures the plain step too
  EXPECT_EQ(policy.DraftsPerRequest(2, 0.004, 0.0, 0.0), 4);
  EXPECT_EQ(policy.DraftsPerRequest(2, 0.004, 0.0, 0.0), 0);
  // Once the slope is known the rule decides: at 1 of 4 drafts accepted, 16 x 5 tokens
  // do not pay here (2 x 72 ms < 1.05 x 200 ms).
  policy.Observe(16, 16);
  EXPECT_EQ(policy.DraftsPerRequest(16, kFixed, kPerToken, 0.0), 0);
  EXPECT_EQ(policy.DraftsPerRequest(16, kFixed, kPerToken, 0.0), 0);
}

TEST(SpecPolicyTest, WhenNothingWouldPayProbesBackOff) {
  SpecPolicy policy({.num_speculative_tokens = 4});
  policy.Observe(1, 4);  // every draft accepted, yet compute-bound: 1 ms + 10 ms per token
  std::vector<int> probes;  // 5 x 161 ms < 1.05 x 801 ms at 16 sequences
  for (int step = 0; step < 400; ++step) {
    if (policy.DraftsPerRequest(16, 0.001, 0.010, 0.0) > 0) probes.push_back(step);
  }
  EXPECT_EQ(probes, (std::vector<int>{7, 23, 55, 119, 247}));  // after 8, 16, 32, ... steps
  // A probe whose step shows drafts paying (the fit was wrong) turns them back on.
  EXPECT_EQ(policy.DraftsPerRequest(1, kFixed, kPerToken, 0.0), 4);
}

TEST(SpecPolicyTest, UserBoundAndNoMeasurements) {
  SpecPolicy policy({.num_speculative_tokens = 2, .disable_by_batch_size = 3});
  EXPECT_EQ(policy.DraftsPerRequest(3, 0.0, 0.0, 0.0), 2);  // the user's bound, no slope needed
  EXPECT_EQ(policy.DraftsPerRequest(4, 0.0, 0.0, 0.0), 0);
  EXPECT_EQ(policy.DraftsPerRequest(0, kFixed, kPerToken, 0.0), 0);
  // The user's bound wins over the cost model, which would say no at 3 x 2 ms per token.
  for (int i = 0; i < 50; ++i) policy.Observe(1, 0);
  EXPECT_EQ(policy.DraftsPerRequest(3, 0.001, 0.010, 0.0), 2);
}

}  // namespace
}  // namespace pagellm
