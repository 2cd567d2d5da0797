// Hermes format. Golden expectations ported from vLLM
// tests/tool_parsers/test_hermes_tool_parser.py and the older
// tests/entrypoints/openai/tool_parsers/test_hermes_tool_parser.py; every case also
// runs under all delta splits (streaming == non-streaming).
#include "parsers/hermes_tool_parser.h"

#include <gtest/gtest.h>

#include "parsers/test_util.h"

namespace pagellm::parsers {
namespace {

using testing::Args;
using testing::ExpectSplitIndependent;
using testing::Options;

ResponseParserOptions Hermes() { return Options(ReasoningParserKind::kNone, ToolParserKind::kHermes); }

TEST(HermesToolParserTest, VllmPlainTextIsForwarded) {
  const char* text = "This is some prior text that has nothing to do with tool calling.";
  ParsedMessage msg = ExpectSplitIndependent(Hermes(), text);
  EXPECT_EQ(msg.content, text);
  EXPECT_TRUE(msg.tool_calls.empty());
}

TEST(HermesToolParserTest, VllmToolCallBetweenTags) {
  ParsedMessage msg = ExpectSplitIndependent(
      Hermes(), "<tool_call>\n{\"name\": \"final_answer\", \"arguments\": {\"trigger\": true}}\n</tool_call>");
  ASSERT_EQ(msg.tool_calls.size(), 1u);
  EXPECT_EQ(msg.tool_calls[0].name, "final_answer");
  EXPECT_EQ(msg.tool_calls[0].arguments, R"({"trigger": true})");  // vLLM asserts the exact string
  EXPECT_EQ(msg.content, "");
  EXPECT_EQ(msg.tool_calls[0].id.rfind("call_", 0), 0u);
  EXPECT_EQ(msg.tool_calls[0].id.size(), 5u + 24u);
}

TEST(HermesToolParserTest, VllmToolCallUntilEos) {
  ParsedMessage msg =
      ExpectSplitIndependent(Hermes(), "<tool_call>\n{\"name\": \"final_answer\", \"arguments\": {\"trigger\": true}}");
  ASSERT_EQ(msg.tool_calls.size(), 1u);
  EXPECT_EQ(msg.tool_calls[0].arguments, R"({"trigger": true})");
}

TEST(HermesToolParserTest, VllmInvalidJsonIsContent) {
  const char* text = "<tool_call>\n{\"name\": \"final_answer\", \"arguments\": {\"trigger\": true}";
  ParsedMessage msg = ExpectSplitIndependent(Hermes(), text);
  EXPECT_TRUE(msg.tool_calls.empty());
  EXPECT_EQ(msg.content, text);
}

TEST(HermesToolParserTest, VllmSerializedArgumentsDecodedOnce) {
  ParsedMessage msg = ExpectSplitIndependent(
      Hermes(), "<tool_call>\n{\"name\": \"get_db_config\", \"arguments\": \"{\\\"param\\\": \\\"max_connections\\\"}\"}"
                "\n</tool_call>");
  ASSERT_EQ(msg.tool_calls.size(), 1u);
  EXPECT_EQ(Args(msg.tool_calls[0]), OrderedJson::parse(R"({"param": "max_connections"})"));
}

TEST(HermesToolParserTest, VllmBareStringArgumentsStayAString) {
  ParsedMessage msg =
      ExpectSplitIndependent(Hermes(), "<tool_call>\n{\"name\": \"do_thing\", \"arguments\": \"hello\"}\n</tool_call>");
  ASSERT_EQ(msg.tool_calls.size(), 1u);
  EXPECT_EQ(Args(msg.tool_calls[0]), OrderedJson("hello"));
}

TEST(HermesToolParserTest, VllmContentThenToolCall) {
  ParsedMessage msg = ExpectSplitIndependent(
      Hermes(), "Sure, let me check the weather.<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"NYC\"}}"
                "</tool_call>");
  EXPECT_EQ(msg.content, "Sure, let me check the weather.");
  ASSERT_EQ(msg.tool_calls.size(), 1u);
  EXPECT_EQ(msg.tool_calls[0].name, "get_weather");
  EXPECT_EQ(Args(msg.tool_calls[0]), OrderedJson::parse(R"({"city": "NYC"})"));
}

TEST(HermesToolParserTest, VllmMultipleToolCalls) {
  ParsedMessage msg = ExpectSplitIndependent(
      Hermes(), "<tool_call>{\"name\": \"search\", \"arguments\": {\"q\": \"cats\"}}</tool_call>"
                "<tool_call>{\"name\": \"search\", \"arguments\": {\"q\": \"dogs\"}}</tool_call>");
  ASSERT_EQ(msg.tool_calls.size(), 2u);
  EXPECT_EQ(Args(msg.tool_calls[0]), OrderedJson::parse(R"({"q": "cats"})"));
  EXPECT_EQ(Args(msg.tool_calls[1]), OrderedJson::parse(R"({"q": "dogs"})"));
  EXPECT_NE(msg.tool_calls[0].id, msg.tool_calls[1].id);
  EXPECT_EQ(msg.content, "");
}

TEST(HermesToolParserTest, VllmTemperatureCall) {
  ParsedMessage msg = ExpectSplitIndependent(
      Hermes(), "<tool_call>{\"name\": \"get_current_temperature\",\"arguments\": {\"location\":"
                "\"San Francisco, California, United States\", \"unit\": \"celsius\"}}</tool_call>");
  ASSERT_EQ(msg.tool_calls.size(), 1u);
  EXPECT_EQ(Args(msg.tool_calls[0]),
            OrderedJson::parse(R"({"location": "San Francisco, California, United States", "unit": "celsius"})"));
}

// The older vLLM test (reasoning shortened): Chinese reasoning, </think>, then a call with a
// Chinese argument; expected arguments string exactly as vLLM's FunctionCall.
TEST(HermesToolParserTest, VllmUnicodeCallAfterReasoning) {
  std::string text =
      "好的，用户现在要研发一个5MW的燃气轮机。\n</think>\n\n<tool_call>\n{\"name\": \"internet_search\", \"arguments\":"
      " {\"question\": \"5MW燃气轮机设计参数 空气流量 压气机压比 转速 燃烧室出口温度 压气机级数 支点布局\"}}\n"
      "</tool_call>\n\n ";
  ParsedMessage msg =
      ExpectSplitIndependent(Options(ReasoningParserKind::kQwen3, ToolParserKind::kHermes), text, /*max_len_3way=*/0);
  ASSERT_EQ(msg.tool_calls.size(), 1u);
  EXPECT_EQ(msg.tool_calls[0].name, "internet_search");
  EXPECT_EQ(msg.tool_calls[0].arguments,
            "{\"question\": \"5MW燃气轮机设计参数 空气流量 压气机压比 转速 燃烧室出口温度 压气机级数 支点布局\"}");
  EXPECT_EQ(msg.reasoning, "好的，用户现在要研发一个5MW的燃气轮机。\n");
  EXPECT_EQ(msg.content, "\n\n");  // what vLLM returns: the text before <tool_call>
}

TEST(HermesToolParserTest, MalformedCallsBecomeTextOthersSurvive) {
  const char* text =
      "A <tool_call> tag in prose. <tool_call>{\"name\": 3}</tool_call> then "
      "<tool_call>{\"name\": \"ok\", \"arguments\": {}}</tool_call>"
      "<tool_call>[1]</tool_call><tool_call>{\"arguments\": {}}</tool_call><tool_call>{bad json}</tool_call>";
  ParsedMessage msg = ExpectSplitIndependent(Hermes(), text);
  ASSERT_EQ(msg.tool_calls.size(), 1u);
  EXPECT_EQ(msg.tool_calls[0].name, "ok");
  EXPECT_EQ(msg.tool_calls[0].arguments, "{}");
  EXPECT_EQ(msg.content,
            "A <tool_call> tag in prose. <tool_call>{\"name\": 3}</tool_call> then "
            "<tool_call>[1]</tool_call><tool_call>{\"arguments\": {}}</tool_call><tool_call>{bad json}</tool_call>");
}

TEST(HermesToolParserTest, WhitespaceBetweenCallsIsDroppedOtherTextKept) {
  ParsedMessage msg = ExpectSplitIndependent(
      Hermes(), "Hi\n<tool_call>\n{\"name\": \"a\"}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": "
                "{\"x\": [1, 2.5, null]}}\n</tool_call>\n  Done.\n");
  ASSERT_EQ(msg.tool_calls.size(), 2u);
  EXPECT_EQ(msg.tool_calls[0].arguments, "{}");  // missing arguments -> {}
  EXPECT_EQ(msg.tool_calls[1].arguments, R"({"x": [1, 2.5, null]})");
  EXPECT_EQ(msg.content, "Hi\n\n  Done.\n");
}

TEST(HermesToolParserTest, ToolsDisabledLeavesMarkupAsText) {
  ResponseParserOptions opts = Hermes();
  opts.tools_enabled = false;
  const char* text = "<tool_call>{\"name\": \"a\"}</tool_call>";
  ParsedMessage msg = ResponseParser::Parse(opts, text);
  EXPECT_TRUE(msg.tool_calls.empty());
  EXPECT_EQ(msg.content, text);
}

}  // namespace
}  // namespace pagellm::parsers
