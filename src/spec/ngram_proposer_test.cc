#include "spec/ngram_proposer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace pagellm {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(NgramProposerTest, ProposesWhatFollowedTheLastOccurrence) {
  NgramProposer p({.min_n = 2, .max_n = 3, .num_speculative_tokens = 3});
  // ... 7 8 9 1 2 ... 7 8 -> after "7 8" came "9 1 2"
  EXPECT_THAT(p.Propose(std::vector<int32_t>{7, 8, 9, 1, 2, 5, 7, 8}), ElementsAre(9, 1, 2));
  // The latest occurrence wins: "7 8" twice, followed by 9 then by 4.
  EXPECT_THAT(p.Propose(std::vector<int32_t>{7, 8, 9, 0, 7, 8, 4, 6, 7, 8}), ElementsAre(4, 6, 7));
}

TEST(NgramProposerTest, LongestNgramFirst) {
  NgramProposer p({.min_n = 1, .max_n = 3, .num_speculative_tokens = 2});
  // "3" alone last occurred before 9, but "2 3" (longer) occurred before 5.
  EXPECT_THAT(p.Propose(std::vector<int32_t>{2, 3, 5, 6, 3, 9, 2, 3}), ElementsAre(5, 6));
}

TEST(NgramProposerTest, PeriodicDraftAtTheEndAndNoneWithoutARepeat) {
  NgramProposer p({.min_n = 2, .max_n = 2, .num_speculative_tokens = 4});
  // After "1 2" came "3 1 2", then the text ends: the period "3 1 2" goes on.
  EXPECT_THAT(p.Propose(std::vector<int32_t>{1, 2, 3, 1, 2}), ElementsAre(3, 1, 2, 3));
  EXPECT_THAT(p.Propose(std::vector<int32_t>{1, 2, 3, 4, 5}), IsEmpty());
  EXPECT_THAT(p.Propose(std::vector<int32_t>{1}), IsEmpty());
  EXPECT_THAT(p.Propose(std::vector<int32_t>{1, 2, 3, 1, 2}, /*max_tokens=*/1), ElementsAre(3));
  EXPECT_THAT(p.Propose(std::vector<int32_t>{1, 2, 3, 1, 2}, /*max_tokens=*/0), IsEmpty());
}

TEST(NgramProposerTest, RepeatedTokenRun) {
  NgramProposer p({.min_n = 2, .max_n = 2, .num_speculative_tokens = 3});
  // "5 5" at the end also occurs one position earlier: the proposal continues the run.
  EXPECT_THAT(p.Propose(std::vector<int32_t>{5, 5, 5}), ElementsAre(5, 5, 5));
  // A run of period 2 ("x 7" repeating) continues with period 2.
  EXPECT_THAT(p.Propose(std::vector<int32_t>{1, 7, 2, 7, 2, 7}), ElementsAre(2, 7, 2));
}

}  // namespace
}  // namespace pagellm
