// Front ends: regex and GBNF parsing, matched through the compiled automaton.
#include <gtest/gtest.h>

#include "grammar/gbnf_parser.h"
#include "grammar/nfa.h"
#include "grammar/regex_parser.h"
#include "grammar/test_support.h"

namespace pagellm::grammar {
namespace {

using testing::IsPrefix;
using testing::Matches;
using testing::MustCompile;

std::shared_ptr<const CompiledGrammar> Regex(const std::string& pattern) {
  Grammar g;
  auto e = CompileRegex(g, pattern, {});
  if (!e.ok()) throw std::runtime_error(e.status().ToString());
  g.SetRoot(g.AddRule("root", *e));
  return MustCompile(g);
}

TEST(Utf8SequencesTest, CoversEveryScalarExactlyOnce) {
  // Decode every 1-4 byte sequence the ranges allow and compare with the input range.
  for (auto [lo, hi] : std::vector<std::pair<uint32_t, uint32_t>>{{0, 0x10FFFF}, {0x80, 0x7FF}, {0x7F, 0x801}, {0xD000, 0xE100}}) {
    uint64_t count = 0;
    for (const auto& seq : Utf8Sequences(lo, hi)) {
      uint64_t n = 1;
      for (auto [a, b] : seq) n *= (b - a + 1);
      count += n;
      std::string first, last;
      for (auto [a, b] : seq) first += static_cast<char>(a), last += static_cast<char>(b);
      size_t p = 0, q = 0;
      uint32_t f = DecodeUtf8(first, &p), l = DecodeUtf8(last, &q);
      EXPECT_GE(f, lo);
      EXPECT_LE(l, hi);
      EXPECT_FALSE(f >= 0xD800 && f <= 0xDFFF);
    }
    uint64_t expect = hi - lo + 1;
    if (lo <= 0xDFFF && hi >= 0xD800) expect -= std::min(hi, 0xDFFFu) - std::max(lo, 0xD800u) + 1;
    EXPECT_EQ(count, expect) << std::hex << lo << "-" << hi;
  }
}

TEST(RegexTest, MatchesLikeAFullMatch) {
  auto v = testing::SmallVocab();
  auto g = Regex("[a-z]+@[a-z]+\\.(com|org)");
  EXPECT_TRUE(Matches(g, *v, "ab@cd.com"));
  EXPECT_TRUE(Matches(g, *v, "x@y.org"));
  EXPECT_FALSE(Matches(g, *v, "x@y.net"));
  EXPECT_FALSE(Matches(g, *v, "@y.com"));
  EXPECT_TRUE(IsPrefix(g, *v, "ab@c"));
  EXPECT_FALSE(IsPrefix(g, *v, "ab@c1"));
}

TEST(RegexTest, QuantifiersClassesEscapes) {
  auto v = testing::SmallVocab();
  auto g = Regex("\\d{2,3}-[^\\s-]?x*(?:ab)+\\u00e9\\.");
  EXPECT_TRUE(Matches(g, *v, "12-ab\xc3\xa9."));
  EXPECT_TRUE(Matches(g, *v, "123-Qxxabab\xc3\xa9."));
  EXPECT_FALSE(Matches(g, *v, "1-ab\xc3\xa9."));
  EXPECT_FALSE(Matches(g, *v, "1234-ab\xc3\xa9."));
  EXPECT_FALSE(Matches(g, *v, "12- ab\xc3\xa9."));
  auto dot = Regex("a.c");
  EXPECT_TRUE(Matches(dot, *v, "a\xe4\xbd\xa0" "c"));
  EXPECT_FALSE(Matches(dot, *v, "a\nc"));
  EXPECT_FALSE(Matches(dot, *v, "a\xe4\xbd" "c"));  // not UTF-8
}

TEST(RegexTest, RefusesWhatItCannotHonour) {
  Grammar g;
  for (const char* bad : {"a(?=b)", "(a)\\1", "\\bword", "a^b", "a$b", "(ab", "ab)", "*a", "[a-"}) {
    auto e = CompileRegex(g, bad, {});
    EXPECT_FALSE(e.ok()) << bad;
  }
}

TEST(RegexTest, SearchModeAddsAnyTextOnUnanchoredSides) {
  auto v = testing::SmallVocab();
  Grammar g;
  RegexOptions o;
  o.search = true;
  g.SetRoot(g.AddRule("root", *CompileRegex(g, "^ab|c$", o)));
  auto c = MustCompile(g);
  EXPECT_TRUE(Matches(c, *v, "abzzz"));
  EXPECT_TRUE(Matches(c, *v, "zzc"));
  EXPECT_FALSE(Matches(c, *v, "zab"));
}

// llama.cpp's grammars/json.gbnf, as shipped (multi-line rules, comments).
constexpr const char* kJsonGbnf = R"(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
)";

TEST(GbnfTest, ParsesLlamaCppJsonGrammar) {
  auto v = testing::SmallVocab();
  auto g = ParseGbnf(kJsonGbnf);
  ASSERT_TRUE(g.ok()) << g.status();
  auto c = MustCompile(*g);
  EXPECT_TRUE(Matches(c, *v, R"({"a": [1, 2.5, {"b": null}], "c": "x\"y"})"));
  EXPECT_TRUE(Matches(c, *v, "{}"));
  EXPECT_FALSE(Matches(c, *v, "[1]"));
  EXPECT_FALSE(Matches(c, *v, R"({"a": })"));
  EXPECT_TRUE(IsPrefix(c, *v, R"({"a": [1, {"b)"));
}

TEST(GbnfTest, RecursionRepetitionAndErrors) {
  auto v = testing::SmallVocab();
  auto g = ParseGbnf("root ::= expr\nexpr ::= term (\"+\" term)*\nterm ::= [0-9]{1,2} | \"(\" expr \")\"\n");
  ASSERT_TRUE(g.ok()) << g.status();
  auto c = MustCompile(*g);
  EXPECT_TRUE(Matches(c, *v, "((1+23)+4)"));
  EXPECT_FALSE(Matches(c, *v, "((1+23)+4"));
  EXPECT_FALSE(Matches(c, *v, "123"));
  EXPECT_FALSE(ParseGbnf("root ::= missing").ok());
  EXPECT_FALSE(ParseGbnf("root ::= root \"a\" | \"b\"").ok());  // left recursion
  EXPECT_FALSE(ParseGbnf("start ::= \"a\"").ok());             // no root
  EXPECT_FALSE(ParseGbnf("root ::= \"a").ok());
}

}  // namespace
}  // namespace pagellm::grammar
