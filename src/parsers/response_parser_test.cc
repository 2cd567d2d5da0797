// Composition of reasoning and tool parsing (tool calls inside <think>), goldens for
// the composed vLLM result (reasoning parser, then tool parser on the content), and
// streaming invariants on longer mixed texts.
#include "parsers/response_parser.h"

#include <gtest/gtest.h>

#include <set>

#include "parsers/test_util.h"

namespace pagellm::parsers {
namespace {

using testing::Args;
using testing::ExpectSplitIndependent;
using testing::Options;

const char* kBashTool = R"([{"type": "function", "function": {"name": "bash", "parameters": {"type": "object",
  "properties": {"command": {"type": "string"}, "timeout": {"type": "integer"}}}}}])";
const char* kToolCallBody =
    "<tool_call>\n<function=bash>\n<parameter=command>\ncat /etc/hosts\n</parameter>\n</function>\n</tool_call>";

ResponseParserOptions Qwen35() { return Options(ReasoningParserKind::kQwen3, ToolParserKind::kQwen3Coder, kBashTool); }

// vLLM test_qwen3_reasoning_parser.py tool_call_no_think_end / tool_call_with_think_no_end:
// the reasoning parser ends the reasoning at <tool_call><function=, and the tool parser
// then turns the content into the call. The composed result is checked here.
TEST(ResponseParserTest, VllmToolCallWithoutThinkEnd) {
  for (std::string prefix : {"", "<think>"}) {
    SCOPED_TRACE(prefix);
    ParsedMessage msg = ExpectSplitIndependent(Qwen35(), prefix + "I need to read the file.\n\n" + kToolCallBody, 0, 80);
    EXPECT_EQ(msg.reasoning, "I need to read the file.\n\n");
    EXPECT_EQ(msg.content, "");
    ASSERT_EQ(msg.tool_calls.size(), 1u);
    EXPECT_EQ(msg.tool_calls[0].name, "bash");
    EXPECT_EQ(msg.tool_calls[0].arguments, R"({"command": "cat /etc/hosts"})");
  }
}

TEST(ResponseParserTest, VllmToolCallImplicitReasoningEndDeltas) {
  std::string text = "I need to read the file.\n\n<tool_call>\n<function=bash>";
  ParsedMessage msg = testing::StreamWithCuts(Qwen35(), text, {26});
  EXPECT_EQ(msg.reasoning, "I need to read the file.\n\n");
  ASSERT_EQ(msg.tool_calls.size(), 1u);
  EXPECT_EQ(msg.tool_calls[0].name, "bash");
  EXPECT_EQ(msg.tool_calls[0].arguments, "{}");
}

TEST(ResponseParserTest, ThinkingDisabledToolCallIsParsedFromContent) {
  ResponseParserOptions opts = Qwen35();
  opts.starts_in_reasoning = false;
  ParsedMessage msg = ExpectSplitIndependent(opts, std::string("I need to read the file.\n\n") + kToolCallBody, 0, 80);
  EXPECT_EQ(msg.reasoning, "");
  EXPECT_EQ(msg.content, "I need to read the file.\n\n");
  ASSERT_EQ(msg.tool_calls.size(), 1u);
}

// The case vLLM loses (#39056): the call sits inside <think> and more reasoning
// follows before </think>.
TEST(ResponseParserTest, ToolCallInsideThinkIsStillACall) {
  std::string text = std::string("<think>\nI should look.\n") + kToolCallBody +
                     "\nThen summarize.\n</think>\n\nChecking now.";
  ParsedMessage msg = ExpectSplitIndependent(Qwen35(), text, 0, 80);
  ASSERT_EQ(msg.tool_calls.size(), 1u);
  EXPECT_EQ(msg.tool_calls[0].arguments, R"({"command": "cat /etc/hosts"})");
  EXPECT_EQ(msg.reasoning, "\nI should look.\n\nThen summarize.\n");
  EXPECT_EQ(msg.content, "\n\nChecking now.");
}

TEST(ResponseParserTest, CallsInReasoningAndContentAreNumberedInOrder) {
  std::string text = std::string("Plan.\n") + kToolCallBody + "</think>\n\n" +
                     "<tool_call>\n<function=bash>\n<parameter=command>\nls\n</parameter>\n<parameter=timeout>\n5\n"
                     "</parameter>\n</function>\n</tool_call>";
  ParsedMessage msg = ExpectSplitIndependent(Qwen35(), text, 0, 80);
  ASSERT_EQ(msg.tool_calls.size(), 2u);
  EXPECT_EQ(msg.tool_calls[0].arguments, R"({"command": "cat /etc/hosts"})");
  EXPECT_EQ(msg.tool_calls[1].arguments, R"({"command": "ls", "timeout": 5})");
  EXPECT_EQ(msg.reasoning, "Plan.\n");
  EXPECT_EQ(msg.content, "\n\n");
}

TEST(ResponseParserTest, HermesCallInsideThink) {
  std::string text =
      "<think>Need weather. <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\"}}\n"
      "</tool_call></think>";
  ParsedMessage msg = ExpectSplitIndependent(Options(ReasoningParserKind::kQwen3, ToolParserKind::kHermes), text, 0, 80);
  ASSERT_EQ(msg.tool_calls.size(), 1u);
  EXPECT_EQ(msg.tool_calls[0].arguments, R"({"city": "Zürich"})");
  EXPECT_EQ(msg.reasoning, "Need weather. ");
  EXPECT_EQ(msg.content, "");
}

TEST(ResponseParserTest, UnclosedCallInReasoningEndsAtThinkEnd) {
  // A hermes body cut by </think>: not JSON -> released as reasoning text.
  std::string text = "<think>a <tool_call>{\"name\": \"f\"</think>answer";
  ParsedMessage msg = ExpectSplitIndependent(Options(ReasoningParserKind::kQwen3, ToolParserKind::kHermes), text);
  EXPECT_TRUE(msg.tool_calls.empty());
  EXPECT_EQ(msg.reasoning, "a <tool_call>{\"name\": \"f\"");
  EXPECT_EQ(msg.content, "answer");
}

TEST(ResponseParserTest, DeltasAreUtf8WholeWhenInputIs) {
  // Token-like deltas that are whole UTF-8: no released piece may split a character.
  std::string text = std::string("<think>考虑一下😀</think>答案是") + kToolCallBody + "完成";
  ResponseParser parser(Qwen35());
  auto whole_utf8 = [](const std::string& s) {
    size_t i = 0;
    while (i < s.size()) {
      unsigned char c = static_cast<unsigned char>(s[i]);
      size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
      if (i + len > s.size()) return false;
      for (size_t k = 1; k < len; ++k) {
        if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
      }
      i += len;
    }
    return true;
  };
  size_t i = 0;
  while (i < text.size()) {  // one code point per delta
    unsigned char c = static_cast<unsigned char>(text[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
    ParsedDelta d = parser.Feed(std::string_view(text).substr(i, len));
    EXPECT_TRUE(whole_utf8(d.reasoning) && whole_utf8(d.content));
    i += len;
  }
  parser.Finish();
  EXPECT_EQ(parser.message().reasoning, "考虑一下😀");
  EXPECT_EQ(parser.message().content, "答案是完成");
  EXPECT_EQ(parser.message().tool_calls.size(), 1u);
}

TEST(ResponseParserTest, ToolCallIdsAreUnique) {
  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i) ids.insert(MakeToolCallId());
  EXPECT_EQ(ids.size(), 1000u);
}

TEST(ResponseParserTest, JsonShapes) {
  ParsedMessage msg = ResponseParser::Parse(Qwen35(), std::string("x</think>") + kToolCallBody);
  OrderedJson calls = ToolCallsToJson(msg.tool_calls);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]["type"], "function");
  EXPECT_EQ(calls[0]["function"]["name"], "bash");
  EXPECT_EQ(calls[0]["function"]["arguments"], R"({"command": "cat /etc/hosts"})");
  EXPECT_EQ(calls[0]["id"], msg.tool_calls[0].id);
  OrderedJson deltas = ToolCallDeltasToJson({{0, "call_x", "bash", "{"}, {0, "", "", "}"}});
  EXPECT_EQ(deltas[0].dump(), R"({"index":0,"id":"call_x","type":"function","function":{"name":"bash","arguments":"{"}})");
  EXPECT_EQ(deltas[1].dump(), R"({"index":0,"function":{"arguments":"}"}})");
}

TEST(ResponseParserTest, KindNames) {
  EXPECT_EQ(*ParseToolParserKind("hermes"), ToolParserKind::kHermes);
  EXPECT_EQ(*ParseToolParserKind("qwen3_coder"), ToolParserKind::kQwen3Coder);
  EXPECT_EQ(*ParseToolParserKind("qwen3_xml"), ToolParserKind::kQwen3Coder);
  EXPECT_EQ(*ParseToolParserKind("none"), ToolParserKind::kNone);
  EXPECT_FALSE(ParseToolParserKind("mistral").ok());
}

// A longer mixed text (reasoning, several calls of both shapes of trouble, unicode),
// under 1-byte, all 2-way and random splits.
TEST(ResponseParserTest, LongMixedTextSplitIndependent) {
  std::string text = "<think>\nLet me plan: use <tool_call> carefully 😀.\n";
  text += kToolCallBody;
  text += "\nok</think>\n\nHere: <tool_call>\n<function=bash>\n<parameter=command>\necho 'ü' </parameter> && ls\n"
          "</parameter>\n<parameter=timeout>\nabc\n</parameter>\n</function>\n</tool_call>\n\n"
          "<function=bash>\n<parameter=command>\npwd\n</parameter>\n</function>\nDone </tool_call> <tool_call";
  ParsedMessage msg = ExpectSplitIndependent(Qwen35(), text, 0, 300);
  ASSERT_EQ(msg.tool_calls.size(), 3u);
  EXPECT_EQ(msg.reasoning, "\nLet me plan: use <tool_call> carefully 😀.\n\nok");
  // </parameter> inside a value ends it (as in vLLM); the rest until the next tag is dropped.
  EXPECT_EQ(Args(msg.tool_calls[1]), OrderedJson::parse(R"({"command": "echo 'ü' ", "timeout": "abc"})"));
  EXPECT_EQ(Args(msg.tool_calls[2]), OrderedJson::parse(R"({"command": "pwd"})"));
  EXPECT_EQ(msg.content, "\n\nHere: \nDone </tool_call> <tool_call");
}

}  // namespace
}  // namespace pagellm::parsers
