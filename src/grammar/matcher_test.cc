// Matcher: masks equal the token-by-token reference, EOS only where accepting,
// rollback restores the state, padding rows are never allowed.
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"
#include "grammar/test_support.h"

namespace pagellm::grammar {
namespace {

std::vector<int32_t> Allowed(std::span<const uint32_t> words, int32_t rows) {
  std::vector<int32_t> out;
  for (int32_t i = 0; i < rows; ++i) {
    if (words[i >> 5] >> (i & 31) & 1) out.push_back(i);
  }
  return out;
}

// Random walks through the grammar: at every step the fast mask equals the reference,
// and the sampled token is accepted.
void CheckRandomWalks(const std::shared_ptr<const CompiledGrammar>& g, const TokenVocab& v, int walks, int steps,
                      uint32_t seed = 1234) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> fast(v.num_words()), ref(v.num_words());
  for (int w = 0; w < walks; ++w) {
    Matcher m(g, &v);
    for (int s = 0; s < steps; ++s) {
      m.FillMask(fast);
      m.FillMaskReference(ref);
      ASSERT_EQ(Allowed(fast, v.num_rows()), Allowed(ref, v.num_rows())) << "walk " << w << " step " << s;
      std::vector<int32_t> allowed = Allowed(fast, v.num_rows());
      EXPECT_LT(allowed.empty() ? -1 : allowed.back(), v.num_tokens());  // padding never allowed
      if (allowed.empty()) break;
      int32_t t = allowed[rng() % allowed.size()];
      ASSERT_TRUE(m.AcceptToken(t));
      if (v.is_eos(t)) break;
    }
  }
}

TEST(MatcherTest, MaskEqualsReferenceOnJsonSchema) {
  auto v = testing::SmallVocab();
  auto g = JsonSchemaToGrammar(OrderedJson::parse(R"({"type":"object","properties":{"name":{"type":"string","maxLength":5},
      "age":{"type":"integer","minimum":0,"maximum":150},"tags":{"type":"array","items":{"type":"string"}},
      "kind":{"enum":["yes","no"]}},"required":["name","kind"]})"), {});
  ASSERT_TRUE(g.ok()) << g.status();
  CheckRandomWalks(testing::MustCompile(*g), *v, 30, 60);
}

TEST(MatcherTest, MaskEqualsReferenceInBoundedStrings) {
  // Inside a string with maxLength the mask takes the text tokens short enough to fit at
  // once (FreeTextRun): every length around the bound, text tokens longer than
  // TokenVocab::kShortTextChars (ASCII and multi-byte), and strings whose characters go
  // different ways (a pattern) must still give exactly the reference masks.
  std::vector<std::string> t = {"<eos>"};
  for (int b = 0; b < 256; ++b) t.push_back(std::string(1, static_cast<char>(b)));
  for (int n : {2, 3, 4, 5, 7, 8, 15, 16, 17, 18, 24, 31, 32, 33, 40}) {
    t.push_back(std::string(static_cast<size_t>(n), 'a'));
    t.push_back(std::string(static_cast<size_t>(n - 1), ' ') + "b");
  }
  std::string ni_hao;
  for (int i = 0; i < 9; ++i) ni_hao += "\xe4\xbd\xa0\xe5\xa5\xbd";  // 18 characters, 54 bytes
  for (const std::string& s : {ni_hao, ni_hao.substr(0, 15), std::string("\"}"), std::string("aaaa\""),
                               std::string("\xe4\xbd"), std::string("abc\\n")}) {
    t.push_back(s);
  }
  std::vector<bool> special(t.size(), false);
  special[0] = true;
  const int32_t rows = static_cast<int32_t>(t.size());
  auto v = TokenVocab::Build(std::move(t), std::move(special), {0}, rows);
  for (const char* schema : {
           R"({"type":"object","properties":{"s":{"type":"string","minLength":3,"maxLength":37},
               "t":{"type":"string","maxLength":9}},"required":["s","t"],"additionalProperties":false})",
           R"({"type":"array","items":{"type":"string","maxLength":20},"maxItems":3})",
           R"({"type":"string","pattern":"^a{2,30}$"})"}) {
    auto g = JsonSchemaToGrammar(OrderedJson::parse(schema), {});
    ASSERT_TRUE(g.ok()) << g.status();
    CheckRandomWalks(testing::MustCompile(*g), *v, 40, 40, 99);
  }
}

TEST(MatcherTest, MaskEqualsReferenceOnRecursiveGrammar) {
  auto v = testing::SmallVocab();
  auto g = JsonObjectGrammar({});
  ASSERT_TRUE(g.ok());
  CheckRandomWalks(testing::MustCompile(*g), *v, 20, 80);
  auto gb = ParseGbnf("root ::= item (\", \" item)*\nitem ::= \"[\" root? \"]\" | [a-c]+ | \"\\u4f60\"");
  ASSERT_TRUE(gb.ok()) << gb.status();
  CheckRandomWalks(testing::MustCompile(*gb), *v, 20, 40);
}

TEST(MatcherTest, MatchersOfOneGrammarShareStatesAcrossThreads) {
  // Every matcher of a compiled grammar over a vocabulary uses one automaton and mask
  // cache: walks on four threads at once still see exactly the reference masks, each
  // with its own history.
  auto v = testing::SmallVocab();
  auto g = JsonSchemaToGrammar(OrderedJson::parse(R"({"type": "object", "properties": {
      "a": {"type": "array", "items": {"type": "string", "maxLength": 6}}, "b": {"enum": ["x", "yz"]}}})"), {});
  ASSERT_TRUE(g.ok());
  auto compiled = testing::MustCompile(*g);
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < 4; ++t) threads.emplace_back([&, t] { CheckRandomWalks(compiled, *v, 8, 40, 77 + t); });
  for (std::thread& t : threads) t.join();
  Matcher a(compiled, v.get()), b(compiled, v.get());
  ASSERT_TRUE(a.AcceptBytes("{\"b\": "));
  std::vector<uint32_t> ma(v->num_words()), mb(v->num_words()), ref(v->num_words());
  a.FillMask(ma);
  b.FillMask(mb);
  b.FillMaskReference(ref);
  EXPECT_NE(ma, mb);  // different states, different masks from the shared cache
  EXPECT_EQ(mb, ref);
}

TEST(MatcherTest, EosOnlyWhereAcceptingAndTerminates) {
  auto v = testing::SmallVocab();
  auto g = ParseGbnf("root ::= \"yes\" | \"no\"");
  Matcher m(testing::MustCompile(*g), v.get());
  std::vector<uint32_t> words(v->num_words());
  m.FillMask(words);
  EXPECT_FALSE(words[0] & 1);  // EOS
  EXPECT_FALSE(m.IsAccepting());
  ASSERT_TRUE(m.AcceptBytes("ye"));
  EXPECT_FALSE(m.AcceptToken(0));
  ASSERT_TRUE(m.AcceptBytes("s"));
  EXPECT_TRUE(m.IsTerminated());
  m.FillMask(words);
  EXPECT_EQ(Allowed(words, v->num_rows()), std::vector<int32_t>{0});  // only EOS
  EXPECT_TRUE(m.AcceptToken(0));
  m.FillMask(words);
  EXPECT_TRUE(Allowed(words, v->num_rows()).empty());
}

TEST(MatcherTest, RollbackRestoresEarlierStates) {
  auto v = testing::SmallVocab();
  auto g = JsonObjectGrammar({});
  Matcher m(testing::MustCompile(*g), v.get());
  std::vector<uint32_t> before(v->num_words()), after(v->num_words());
  ASSERT_TRUE(m.AcceptBytes("{\""));
  m.FillMask(before);
  ASSERT_TRUE(m.AcceptBytes("ab"));
  ASSERT_TRUE(m.AcceptBytes("\": ["));
  EXPECT_EQ(m.num_tokens(), 3);
  m.Rollback(2);
  m.FillMask(after);
  EXPECT_EQ(before, after);
  EXPECT_FALSE(m.AcceptBytes("\n"));  // raw newline inside a key
  EXPECT_EQ(m.num_tokens(), 1);
}

TEST(MatcherTest, RejectsTokensOutsideTheGrammar) {
  auto v = testing::SmallVocab();
  auto g = JsonSchemaToGrammar(OrderedJson::parse(R"({"type":"boolean"})"), {});
  Matcher m(testing::MustCompile(*g), v.get());
  int32_t null_id = -1, true_id = -1;
  for (int32_t i = 0; i < v->num_tokens(); ++i) {
    if (v->bytes(i) == "null") null_id = i;
    if (v->bytes(i) == "true") true_id = i;
  }
  EXPECT_FALSE(m.AcceptToken(null_id));
  EXPECT_FALSE(m.AcceptToken(v->num_rows() - 1));  // padding
  EXPECT_TRUE(m.AcceptToken(true_id));
  EXPECT_TRUE(m.IsTerminated());
}

}  // namespace
}  // namespace pagellm::grammar
