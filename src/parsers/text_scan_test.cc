#include "parsers/text_scan.h"

#include <gtest/gtest.h>

namespace pagellm::parsers {
namespace {

TEST(TextScanTest, FindFirstTagPicksEarliest) {
  TagMatch m = FindFirstTag("ab</think>c<think>", {"<think>", "</think>"});
  EXPECT_EQ(m.pos, 2u);
  EXPECT_EQ(m.tag_idx, 1);
  EXPECT_FALSE(FindFirstTag("no tags", {"<think>"}).found());
}

TEST(TextScanTest, PartialSuffixIsAProperPrefixOfTheTag) {
  EXPECT_EQ(PartialTagSuffixLen("hello <tool_ca", "<tool_call>"), 8u);
  EXPECT_EQ(PartialTagSuffixLen("hello <", "<tool_call>"), 1u);
  EXPECT_EQ(PartialTagSuffixLen("hello", "<tool_call>"), 0u);
  // A complete tag is not "partial": FindFirstTag handles it.
  EXPECT_EQ(PartialTagSuffixLen("<tool_call>", "<tool_call>"), 0u);
  // "</" is a prefix of "</think>" but not of "<think>".
  EXPECT_EQ(SafePrefixLen("x</", {"<think>", "</think>"}), 1u);
  EXPECT_EQ(SafePrefixLen("x<", {"<think>", "</think>"}), 1u);
  EXPECT_EQ(SafePrefixLen("x", {"<think>"}), 1u);
}

TEST(TextScanTest, Trim) {
  EXPECT_EQ(TrimSpace(" \n\t{}\r\n"), "{}");
  EXPECT_EQ(TrimSpace("  "), "");
  EXPECT_EQ(SkipSpace("  a"), 2u);
}

}  // namespace
}  // namespace pagellm::parsers
