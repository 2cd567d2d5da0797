#include "tokenizer/added_vocabulary.h"

#include <gtest/gtest.h>

namespace pagellm::tokenizer {
namespace {

using Seg = AddedVocabulary::Segment;

std::vector<std::string> Pieces(const AddedVocabulary& v, std::string_view text, bool parse_special = true) {
  std::vector<Seg> segs;
  v.Split(text, false, parse_special, &segs);
  std::vector<std::string> out;
  for (const Seg& s : segs)
    out.push_back((s.id >= 0 ? "#" + std::to_string(s.id) + ":" : "") + std::string(text.substr(s.begin, s.end - s.begin)));
  return out;
}

using V = std::vector<std::string>;

TEST(AddedVocabularyTest, LeftmostLongestMatch) {
  AddedVocabulary v({{.id = 1, .content = "<a>", .special = true}, {.id = 2, .content = "<a><b>", .special = true}});
  EXPECT_EQ(Pieces(v, "x<a><b>y<a>"), (V{"x", "#2:<a><b>", "y", "#1:<a>"}));
  EXPECT_EQ(Pieces(v, "<a"), (V{"<a"}));
}

TEST(AddedVocabularyTest, StripFlagsTakeSurroundingWhitespace) {
  AddedVocabulary v({{.id = 1, .content = "<L>", .lstrip = true}, {.id = 2, .content = "<R>", .rstrip = true}});
  EXPECT_EQ(Pieces(v, "a  <L> b"), (V{"a", "#1:  <L>", " b"}));
  EXPECT_EQ(Pieces(v, "a <R> \n b"), (V{"a ", "#2:<R> \n ", "b"}));
}

TEST(AddedVocabularyTest, SingleWordNeedsWordBoundaries) {
  AddedVocabulary v({{.id = 1, .content = "cat", .single_word = true}});
  EXPECT_EQ(Pieces(v, "a cat!"), (V{"a ", "#1:cat", "!"}));
  EXPECT_EQ(Pieces(v, "concat"), (V{"concat"}));
  EXPECT_EQ(Pieces(v, "cats"), (V{"cats"}));
  EXPECT_EQ(Pieces(v, "\u00E9cat"), (V{"\u00E9cat"}));  // é is a word character
}

TEST(AddedVocabularyTest, ParseSpecialFalseKeepsNonSpecialTokens) {
  AddedVocabulary v({{.id = 1, .content = "<s>", .special = true}, {.id = 2, .content = "<t>", .special = false}});
  EXPECT_EQ(Pieces(v, "<s><t>", /*parse_special=*/false), (V{"<s>", "#2:<t>"}));
  EXPECT_EQ(Pieces(v, "<s><t>"), (V{"#1:<s>", "#2:<t>"}));
}

}  // namespace
}  // namespace pagellm::tokenizer
