#include "sched/token_budget.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace pagellm {
namespace {

using ::testing::ElementsAreArray;

// Chunk sizes a lone prompt of `num_prompt_tokens` gets, one step per chunk.
std::vector<int32_t> Chunks(const BatchLimits& limits, int32_t num_prompt_tokens) {
  std::vector<int32_t> chunks;
  int32_t left = num_prompt_tokens;
  while (left > 0) {
    TokenBudget budget(limits);
    const int32_t n = budget.Choose(left);
    if (n == 0) break;
    budget.Charge(n, left);
    chunks.push_back(n);
    left -= n;
  }
  return chunks;
}

TEST(TokenBudgetTest, ChunkSizesAtSeveralBudgets) {
  BatchLimits limits;
  limits.max_num_batched_tokens = 4;
  EXPECT_THAT(Chunks(limits, 23), ElementsAreArray({4, 4, 4, 4, 4, 3}));
  limits.max_num_batched_tokens = 7;
  EXPECT_THAT(Chunks(limits, 23), ElementsAreArray({7, 7, 7, 2}));
  limits.max_num_batched_tokens = 16;
  EXPECT_THAT(Chunks(limits, 23), ElementsAreArray({16, 7}));
  limits.max_num_batched_tokens = 64;
  EXPECT_THAT(Chunks(limits, 23), ElementsAreArray({23}));
}

TEST(TokenBudgetTest, LongPrefillThresholdCapsEachRequest) {
  BatchLimits limits{.max_num_batched_tokens = 64, .long_prefill_token_threshold = 8};
  EXPECT_THAT(Chunks(limits, 20), ElementsAreArray({8, 8, 4}));
  TokenBudget budget(limits);
  EXPECT_EQ(budget.Choose(1), 1);  // decodes are not prefill
}

TEST(TokenBudgetTest, PrefillCapPerStepLeavesRoomForDecodes) {
  BatchLimits limits{.max_num_batched_tokens = 16, .max_prefill_tokens_per_step = 6};
  TokenBudget budget(limits);
  EXPECT_EQ(budget.Choose(10), 6);
  budget.Charge(6, 10);
  EXPECT_EQ(budget.Choose(5), 0);  // prefill share used up
  EXPECT_EQ(budget.Choose(1), 1);  // decodes still fit
  budget.Charge(1, 1);
  EXPECT_EQ(budget.num_tokens_left(), 9);
  EXPECT_EQ(budget.num_prefill_tokens_left(), 0);
  EXPECT_EQ(budget.num_scheduled_tokens(), 7);
}

TEST(TokenBudgetTest, PrefillCapIsLiftedWhenNoDecodeRuns) {
  BatchLimits limits{.max_num_batched_tokens = 16, .max_prefill_tokens_per_step = 6};
  TokenBudget budget(limits, /*decodes_running=*/false);
  EXPECT_EQ(budget.Choose(10), 10);
  budget.Charge(10, 10);
  EXPECT_EQ(budget.Choose(9), 6);  // only the step budget limits it
  EXPECT_EQ(budget.num_scheduled_prefill_tokens(), 10);
}

TEST(TokenBudgetTest, PrefillCapAndLongPrefillThresholdBothApply) {
  BatchLimits limits{.max_num_batched_tokens = 64, .long_prefill_token_threshold = 4,
                     .max_prefill_tokens_per_step = 10};
  TokenBudget budget(limits, /*decodes_running=*/true);
  EXPECT_EQ(budget.Choose(1), 1);
  budget.Charge(1, 1);
  for (int32_t want : {4, 4, 2}) {  // per request 4, per step 10 in all
    EXPECT_EQ(budget.Choose(30), want);
    budget.Charge(want, 30);
  }
  EXPECT_EQ(budget.Choose(30), 0);
  EXPECT_EQ(budget.Choose(1), 1);  // decodes are not prefill
}

TEST(TokenBudgetTest, WithoutChunkingTheFirstPromptOfAStepIsExemptFromTheCap) {
  BatchLimits limits{.max_num_batched_tokens = 32, .enable_chunked_prefill = false,
                     .max_prefill_tokens_per_step = 4};
  TokenBudget budget(limits, /*decodes_running=*/true);
  EXPECT_EQ(budget.Choose(1), 1);
  budget.Charge(1, 1);
  EXPECT_EQ(budget.Choose(10), 10);  // whole, although 10 > 4: else it could never run
  budget.Charge(10, 10);
  EXPECT_EQ(budget.Choose(2), 0);  // the cap holds for the rest of the step
  EXPECT_EQ(budget.Choose(1), 1);
  EXPECT_EQ(budget.num_scheduled_prefill_tokens(), 10);
}

TEST(TokenBudgetTest, WithoutChunkingAPromptFitsWholeOrNotAtAll) {
  BatchLimits limits{.max_num_batched_tokens = 10, .enable_chunked_prefill = false};
  TokenBudget budget(limits);
  EXPECT_EQ(budget.Choose(7), 7);
  budget.Charge(7, 7);
  EXPECT_EQ(budget.Choose(4), 0);
  EXPECT_EQ(budget.Choose(3), 3);
  budget.Charge(3, 3);
  EXPECT_EQ(budget.Choose(1), 0);  // budget exhausted, even for a decode
}

TEST(TokenBudgetTest, ValidateRejectsUnschedulableConfigs) {
  EXPECT_TRUE(BatchLimits{.max_num_batched_tokens = 8}.Validate(1024).ok());
  EXPECT_FALSE(BatchLimits{.max_num_batched_tokens = 0}.Validate(16).ok());
  EXPECT_FALSE(BatchLimits{.max_num_seqs = 0}.Validate(16).ok());
  const Status s =
      BatchLimits{.max_num_batched_tokens = 512, .enable_chunked_prefill = false}.Validate(1024);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("1024"), std::string::npos) << s;
  EXPECT_NE(s.message().find("512"), std::string::npos) << s;
  // The prefill cap cannot make a prompt unschedulable (the first one is exempt).
  EXPECT_TRUE((BatchLimits{.max_num_batched_tokens = 1024, .enable_chunked_prefill = false,
                           .max_prefill_tokens_per_step = 16}.Validate(1024).ok()));
  EXPECT_FALSE(BatchLimits{.max_prefill_tokens_per_step = -1}.Validate(16).ok());
}

}  // namespace
}  // namespace pagellm
