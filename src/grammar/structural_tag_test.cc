// Structural tags (free text with constrained tagged parts) and tool calls in "auto"
// mode, on the small synthetic vocabulary; masks agree with the token-by-token reference.
#include "grammar/structural_tag.h"

#include <gtest/gtest.h>

#include "grammar/grammar_request.h"
#include "grammar/test_support.h"

namespace pagellm::grammar {
namespace {

using testing::IsPrefix;
using testing::Matches;

std::shared_ptr<const CompiledGrammar> Build(GrammarKind kind, const std::string& spec) {
  auto g = BuildGrammar(GrammarRequest{.kind = kind, .spec = spec});
  if (!g.ok()) throw std::runtime_error(g.status().ToString());
  return testing::MustCompile(*g);
}

constexpr const char* kWeather = R"({"type": "structural_tag",
  "structures": [{"begin": "<function=get_weather>", "schema": {"type": "object", "properties": {"city": {"type": "string"}},
                  "required": ["city"], "additionalProperties": false}, "end": "</function>"},
                 {"begin": "<function=now>", "schema": {"type": "object", "properties": {}, "additionalProperties": false},
                  "end": "</function>"}],
  "triggers": ["<function="]})";

TEST(StructuralTagTest, FreeTextAroundConstrainedParts) {
  auto v = testing::SmallVocab();
  auto g = Build(GrammarKind::kStructuralTag, kWeather);
  EXPECT_TRUE(Matches(g, *v, ""));
  EXPECT_TRUE(Matches(g, *v, "Let me check. <b>bold</b> <function is a word, <functio too"));
  EXPECT_TRUE(Matches(g, *v, "Checking.<function=get_weather>{\"city\": \"Paris\"}</function> and "
                             "<function=now>{}</function><function=now>{}</function>done"));
  // Once the trigger is written the structure must follow, exactly.
  EXPECT_FALSE(Matches(g, *v, "<function=get_weather>{\"town\": \"Paris\"}</function>"));
  EXPECT_FALSE(Matches(g, *v, "<function=other>{}</function>"));
  EXPECT_FALSE(IsPrefix(g, *v, "<function=x"));
  EXPECT_FALSE(Matches(g, *v, "<function=get_weather>{\"city\": \"Paris\"}"));  // no end yet
  EXPECT_TRUE(IsPrefix(g, *v, "<function=get_weather>{\"city\": \"Par"));
  EXPECT_FALSE(Matches(g, *v, "text <function=now>{}</function> and <function="));
  // A partial trigger at the end is free text.
  EXPECT_TRUE(Matches(g, *v, "almost <functio"));
}

TEST(StructuralTagTest, MasksMatchTheReferenceInAndOutOfParts) {
  auto v = testing::SmallVocab();
  auto g = Build(GrammarKind::kStructuralTag, kWeather);
  for (const char* prefix : {"", "free <fun", "x<function=", "<function=get_weather>{\"ci", "<function=now>{}</function>"}) {
    Matcher m(g, v.get());
    ASSERT_TRUE(m.AcceptBytes(prefix)) << prefix;
    std::vector<uint32_t> fast(v->num_words()), slow(v->num_words());
    m.FillMask(fast);
    m.FillMaskReference(slow);
    EXPECT_EQ(fast, slow) << prefix;
  }
}

TEST(StructuralTagTest, RefusesWhatItCannotHonour) {
  for (const char* bad : {
           R"({"structures": [], "triggers": ["<f"]})",
           R"({"structures": [{"begin": "<f>", "end": "</f>"}], "triggers": []})",
           R"({"structures": [{"begin": "<g>", "end": "</g>"}], "triggers": ["<f"]})",
           R"({"structures": [{"begin": "<f>", "end": "</f>"}], "triggers": ["<f", "<h"]})",
           R"({"structures": [{"begin": "<f>", "end": "</f>", "schema": {"not": {}}}], "triggers": ["<f"]})",
           R"({"structures": [{"begin": "<f>", "end": "</f>", "stop": true}], "triggers": ["<f"]})",
           R"({"type": "structural_tag", "format": {"type": "triggered_tags"}})",
           R"([1, 2])"}) {
    EXPECT_FALSE(BuildGrammar(GrammarRequest{.kind = GrammarKind::kStructuralTag, .spec = bad}).ok()) << bad;
  }
  auto s = BuildGrammar(GrammarRequest{.kind = GrammarKind::kStructuralTag,
                                       .spec = R"({"structures": [{"begin": "<f>", "end": "</f>", "schema": {"not": {}}}], "triggers": ["<f"]})"});
  EXPECT_NE(s.status().message().find("structures[0].schema"), std::string::npos) << s.status().ToString();
  EXPECT_NE(s.status().message().find("not"), std::string::npos) << s.status().ToString();
}

TEST(StructuralTagTest, AutoToolCallsConstrainOnlyTheListedTools) {
  auto v = testing::SmallVocab();
  auto hermes = Build(GrammarKind::kToolCalls, R"({"format": "hermes", "mode": "auto", "tools": [{"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]})");
  const std::string call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
  EXPECT_TRUE(Matches(hermes, *v, "The weather in Paris, please."));
  EXPECT_TRUE(Matches(hermes, *v, "Sure.\n" + call));
  EXPECT_TRUE(Matches(hermes, *v, call + "\n" + call));
  EXPECT_FALSE(Matches(hermes, *v, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"town\": \"Paris\"}}\n</tool_call>"));
  // A tool that is not listed (not strict) is free text, for the tool parser to read.
  EXPECT_TRUE(Matches(hermes, *v, "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": 1}}\n</tool_call>"));
  auto xml = Build(GrammarKind::kToolCalls, R"({"format": "qwen3_coder", "mode": "auto", "tools": [{"name": "f",
      "parameters": {"type": "object", "properties": {"days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["days"]}}]})");
  EXPECT_TRUE(Matches(xml, *v, "ok <tool_call>\n<function=f>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_FALSE(Matches(xml, *v, "<tool_call>\n<function=f>\n<parameter=days>\n9\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_TRUE(Matches(xml, *v, "<tool_call>\n<function=g>\n</function>\n</tool_call>"));
}

TEST(StructuralTagTest, TextWithoutOverlappingWords) {
  // Aho-Corasick: "abab" must be refused after "aba" restarts inside "ab"; "aab" contains "ab".
  Grammar g;
  g.SetRoot(g.AddRule("root", g.AddTextWithout({"abab", "ca"})));
  auto c = testing::MustCompile(g);
  auto v = testing::SmallVocab();
  EXPECT_TRUE(Matches(c, *v, "aba bab abba acb"));
  EXPECT_FALSE(Matches(c, *v, "xabab"));
  EXPECT_FALSE(Matches(c, *v, "aababab"));
  EXPECT_FALSE(Matches(c, *v, "cca"));
  EXPECT_TRUE(Matches(c, *v, "abaab"));
  EXPECT_FALSE(Matches(c, *v, "ababca"));
}

}  // namespace
}  // namespace pagellm::grammar
