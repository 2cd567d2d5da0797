#include "runner/logits_processors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace pagellm {
namespace {

TEST(LogitsProcessorsTest, MaskTokensSetsMinusInfinityAndSkipsOutOfRange) {
  std::vector<float> row = {1, 2, 3, 4};
  const std::vector<int32_t> ids = {1, 3, 9, -1};
  MaskTokens(row, ids);
  EXPECT_EQ(row[0], 1.0f);
  EXPECT_TRUE(std::isinf(row[1]) && row[1] < 0);
  EXPECT_EQ(row[2], 3.0f);
  EXPECT_TRUE(std::isinf(row[3]) && row[3] < 0);
}

TEST(LogitsProcessorsTest, LogitBiasAddsAndAccumulates) {
  std::vector<float> row = {1, 2, 3};
  const std::vector<std::pair<int32_t, float>> bias = {{0, 5.0f}, {2, -1.5f}, {2, -0.5f}, {7, 9}};
  ApplyLogitBias(row, bias);
  EXPECT_FLOAT_EQ(row[0], 6.0f);
  EXPECT_FLOAT_EQ(row[1], 2.0f);
  EXPECT_FLOAT_EQ(row[2], 1.0f);
}

TEST(LogitsProcessorsTest, RepetitionPenaltyDividesPositiveMultipliesNegativeOncePerToken) {
  std::vector<float> row = {2.0f, -2.0f, 4.0f, -1.0f, 3.0f};
  std::vector<uint8_t> seen(row.size(), 0);
  // Token 0 appears in both prompt and output and 2 appears twice: penalised once.
  const std::vector<int32_t> prompt = {0, 1, 0};
  const std::vector<int32_t> output = {2, 2, 0};
  ApplyRepetitionPenalty(row, 2.0f, prompt, output, seen);
  EXPECT_FLOAT_EQ(row[0], 1.0f);   // 2 / 2
  EXPECT_FLOAT_EQ(row[1], -4.0f);  // -2 * 2
  EXPECT_FLOAT_EQ(row[2], 2.0f);   // 4 / 2
  EXPECT_FLOAT_EQ(row[3], -1.0f);  // unseen
  EXPECT_FLOAT_EQ(row[4], 3.0f);   // unseen
  for (uint8_t v : seen) EXPECT_EQ(v, 0);
}

TEST(LogitsProcessorsTest, PresenceAndFrequencyUseOutputCountsOnly) {
  std::vector<float> row = {1.0f, 1.0f, 1.0f, 1.0f};
  std::vector<int32_t> counts(row.size(), 0);
  const std::vector<int32_t> output = {1, 3, 3, 3};
  ApplyPresenceFrequencyPenalties(row, 0.5f, 0.25f, output, counts);
  EXPECT_FLOAT_EQ(row[0], 1.0f);
  EXPECT_FLOAT_EQ(row[1], 1.0f - 0.5f - 0.25f * 1);
  EXPECT_FLOAT_EQ(row[2], 1.0f);
  EXPECT_FLOAT_EQ(row[3], 1.0f - 0.5f - 0.25f * 3);
  for (int32_t c : counts) EXPECT_EQ(c, 0);
}

TEST(LogitsProcessorsTest, NegativePenaltiesEncourageRepeats) {
  std::vector<float> row = {0.0f, 0.0f};
  std::vector<int32_t> counts(row.size(), 0);
  const std::vector<int32_t> output = {0, 0};
  ApplyPresenceFrequencyPenalties(row, -1.0f, -0.5f, output, counts);
  EXPECT_FLOAT_EQ(row[0], 2.0f);
  EXPECT_FLOAT_EQ(row[1], 0.0f);
}

}  // namespace
}  // namespace pagellm
