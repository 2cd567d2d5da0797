// GrammarRequest kinds, the compile cache, and tool calls in the models' formats.
#include <gtest/gtest.h>

#include "grammar/grammar_request.h"
#include "grammar/test_support.h"

namespace pagellm::grammar {
namespace {

using testing::Matches;

std::shared_ptr<const CompiledGrammar> Build(const GrammarRequest& r) {
  auto g = BuildGrammar(r);
  if (!g.ok()) throw std::runtime_error(g.status().ToString());
  return testing::MustCompile(*g);
}

TEST(GrammarRequestTest, ChoiceRegexAndCache) {
  auto v = testing::SmallVocab();
  GrammarRequest choice{.kind = GrammarKind::kChoice, .choice = {"yes", "no", "a\"b"}};
  auto c = Build(choice);
  EXPECT_TRUE(Matches(c, *v, "yes"));
  EXPECT_TRUE(Matches(c, *v, "a\"b"));  // literal, not JSON-quoted
  EXPECT_FALSE(Matches(c, *v, "ye"));
  GrammarCache cache(2);
  GrammarRequest re{.kind = GrammarKind::kRegex, .spec = "[0-9]+"};
  auto a = cache.Get(re);
  auto b = cache.Get(re);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->get(), b->get());  // compiled once
  EXPECT_FALSE(cache.Get(GrammarRequest{.kind = GrammarKind::kRegex, .spec = "(a"}).ok());
  EXPECT_FALSE(cache.Get(GrammarRequest{.kind = GrammarKind::kJsonSchema, .spec = "{not json"}).ok());
}

TEST(GrammarRequestTest, HermesToolCalls) {
  auto v = testing::SmallVocab();
  GrammarRequest r{.kind = GrammarKind::kToolCalls,
                   .spec = R"({"format":"hermes","required":true,"tools":[{"name":"get_weather","parameters":
                       {"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]})"};
  auto g = Build(r);
  const std::string call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
  EXPECT_TRUE(Matches(g, *v, call));
  EXPECT_TRUE(Matches(g, *v, call + "\n" + call));
  EXPECT_FALSE(Matches(g, *v, "<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(Matches(g, *v, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>"));
}

TEST(GrammarRequestTest, Qwen3CoderXmlToolCalls) {
  auto v = testing::SmallVocab();
  GrammarRequest r{.kind = GrammarKind::kToolCalls,
                   .spec = R"({"format":"qwen3_coder","tools":[{"name":"f","parameters":{"type":"object",
                       "properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1,"maximum":7}},
                       "required":["city"]}}]})"};
  auto g = Build(r);
  EXPECT_TRUE(Matches(g, *v, "<tool_call>\n<function=f>\n<parameter=city>\nParis\n</parameter>\n"
                             "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_TRUE(Matches(g, *v, "<tool_call>\n<function=f>\n<parameter=city>\nRome\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_FALSE(Matches(g, *v, "<tool_call>\n<function=f>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_FALSE(Matches(g, *v, "<tool_call>\n<function=f>\n<parameter=city>\nnull\n</parameter>\n</function>\n</tool_call>"));
}

// The parser keeps a value whose schema has no "type" (an enum of strings, say) as raw
// text, so the grammar must write `C`, not the JSON `"C"`; what the raw form cannot show
// (a pattern, an enum value starting with "n") is refused.
TEST(GrammarRequestTest, Qwen3CoderWritesUntypedValuesAsTheParserReadsThem) {
  auto v = testing::SmallVocab();
  GrammarRequest r{.kind = GrammarKind::kToolCalls,
                   .spec = R"({"format":"qwen3_coder","tools":[{"name":"f","parameters":{"type":"object",
                       "properties":{"unit":{"enum":["C","F"]},"n":{"anyOf":[{"type":"integer"},{"type":"null"}]}},
                       "required":["unit"]}}]})"};
  auto g = Build(r);
  EXPECT_TRUE(Matches(g, *v, "<tool_call>\n<function=f>\n<parameter=unit>\nC\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_FALSE(Matches(g, *v, "<tool_call>\n<function=f>\n<parameter=unit>\n\"C\"\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_TRUE(Matches(g, *v, "<tool_call>\n<function=f>\n<parameter=unit>\nF\n</parameter>\n"
                             "<parameter=n>\n12\n</parameter>\n</function>\n</tool_call>"));
  for (const char* bad : {R"({"type":"string","pattern":"a+"})", R"({"enum":["no","yes"]})", R"({"enum":[1,2]})"}) {
    GrammarRequest b{.kind = GrammarKind::kToolCalls,
                     .spec = std::string(R"({"format":"qwen3_coder","tools":[{"name":"f","parameters":{"type":"object","properties":{"p":)") +
                             bad + "}}}]}"};
    EXPECT_FALSE(BuildGrammar(b).ok()) << bad;
  }
}

}  // namespace
}  // namespace pagellm::grammar
