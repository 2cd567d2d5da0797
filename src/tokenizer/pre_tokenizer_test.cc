#include "tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>

namespace pagellm::tokenizer {
namespace {

std::vector<std::string> Split(std::string_view text, std::string_view pattern, SplitBehavior behavior,
                               bool invert = false) {
  auto re = Regex::Compile(pattern);
  EXPECT_TRUE(re.ok()) << re.status();
  std::vector<std::string_view> pieces;
  SplitByRegex(text, **re, behavior, invert, &pieces);
  return {pieces.begin(), pieces.end()};
}

using V = std::vector<std::string>;

// Expected values are the examples of HF's SplitDelimiterBehavior documentation.
TEST(SplitByRegexTest, BehaviorsMatchHfDocumentation) {
  std::string_view text = "the-final--countdown";
  EXPECT_EQ(Split(text, "-", SplitBehavior::kRemoved), (V{"the", "final", "countdown"}));
  EXPECT_EQ(Split(text, "-", SplitBehavior::kIsolated), (V{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(Split(text, "-", SplitBehavior::kMergedWithPrevious), (V{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(Split(text, "-", SplitBehavior::kMergedWithNext), (V{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(Split(text, "-", SplitBehavior::kContiguous), (V{"the", "-", "final", "--", "countdown"}));
  EXPECT_EQ(Split(text, "-", SplitBehavior::kRemoved, /*invert=*/true), (V{"-", "-", "-"}));
}

TEST(SplitByRegexTest, Gpt2PatternOnContractionsAndSpaces) {
  EXPECT_EQ(Split("I'm  here\n", kGpt2Pattern, SplitBehavior::kIsolated),
            (V{"I", "'m", " ", " here", "\n"}));
}

TEST(SplitByRegexTest, EmptyMatchesAreSkippedLikeOniguruma) {
  // Oniguruma's find_iter yields (0,0) and (1,3) for a* on "baa"; empty pieces vanish.
  EXPECT_EQ(Split("baa", "a*", SplitBehavior::kIsolated), (V{"b", "aa"}));
}

TEST(RegexTest, WordClassFollowsOniguruma) {
  // Oniguruma's \w includes marks, PCRE2's does not: "e\u0301" must stay one piece.
  EXPECT_EQ(Split("e\u0301x y", R"(\w+)", SplitBehavior::kRemoved), (V{" "}));
  EXPECT_FALSE(Regex::Compile("(unclosed").ok());
}

}  // namespace
}  // namespace pagellm::tokenizer
