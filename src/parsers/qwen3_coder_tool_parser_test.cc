// qwen3_coder format. Golden expectations ported from vLLM
// tests/tool_parsers/test_qwen3coder_tool_parser.py (tools, outputs, expected
// arguments and content); every case also runs under all delta splits.
#include "parsers/qwen3_coder_tool_parser.h"

#include <gtest/gtest.h>

#include "parsers/test_util.h"

namespace pagellm::parsers {
namespace {

using testing::Args;
using testing::ExpectSplitIndependent;
using testing::Options;

// vLLM's sample_tools fixture.
const char* kSampleTools = R"([
  {"type": "function", "function": {"name": "get_current_weather", "description": "Get the current weather",
   "parameters": {"type": "object", "properties": {
     "city": {"type": "string"}, "state": {"type": "string"},
     "unit": {"type": "string", "enum": ["fahrenheit", "celsius"]}}, "required": ["city", "state"]}}},
  {"type": "function", "function": {"name": "calculate_area", "description": "Calculate area of a shape",
   "parameters": {"type": "object", "properties": {
     "shape": {"type": "string"}, "dimensions": {"type": "object"}, "precision": {"type": "integer"}}}}}
])";

ResponseParserOptions Coder(const char* tools = kSampleTools) {
  return Options(ReasoningParserKind::kNone, ToolParserKind::kQwen3Coder, tools);
}

const char* kWeatherDallas =
    "<tool_call>\n<function=get_current_weather>\n<parameter=city>\nDallas\n</parameter>\n<parameter=state>\nTX\n"
    "</parameter>\n<parameter=unit>\nfahrenheit\n</parameter>\n</function>\n</tool_call>";

struct CoderCase {
  const char* id;
  std::string output;
  std::vector<std::pair<const char*, const char*>> calls;  // name, expected arguments JSON
  const char* content;
};

TEST(Qwen3CoderToolParserTest, VllmExtractToolCalls) {
  const CoderCase cases[] = {
      {"no_tools", "This is a test without tools", {}, "This is a test without tools"},
      {"single_tool", kWeatherDallas,
       {{"get_current_weather", R"({"city": "Dallas", "state": "TX", "unit": "fahrenheit"})"}}, ""},
      {"single_tool_with_content", std::string("Sure! Let me check the weather for you.") + kWeatherDallas,
       {{"get_current_weather", R"({"city": "Dallas", "state": "TX", "unit": "fahrenheit"})"}},
       "Sure! Let me check the weather for you."},
      {"single_tool_multiline_param",
       "<tool_call>\n<function=calculate_area>\n<parameter=shape>\nrectangle\n</parameter>\n<parameter=dimensions>\n"
       "{\"width\": 10, \n \"height\": 20}\n</parameter>\n<parameter=precision>\n2\n</parameter>\n</function>\n"
       "</tool_call>",
       {{"calculate_area", R"({"shape": "rectangle", "dimensions": {"width": 10, "height": 20}, "precision": 2})"}},
       ""},
      {"parallel_tools",
       std::string(kWeatherDallas) +
           "\n<tool_call>\n<function=get_current_weather>\n<parameter=city>\nOrlando\n</parameter>\n"
           "<parameter=state>\nFL\n</parameter>\n<parameter=unit>\ncelsius\n</parameter>\n</function>\n</tool_call>",
       {{"get_current_weather", R"({"city": "Dallas", "state": "TX", "unit": "fahrenheit"})"},
        {"get_current_weather", R"({"city": "Orlando", "state": "FL", "unit": "celsius"})"}},
       ""},
      {"tool_with_typed_params",
       "Let me calculate that area for you.<tool_call>\n<function=calculate_area>\n<parameter=shape>\ncircle\n"
       "</parameter>\n<parameter=dimensions>\n{\"radius\": 15.5}\n</parameter>\n<parameter=precision>\n3\n"
       "</parameter>\n</function>\n</tool_call>",
       {{"calculate_area", R"({"shape": "circle", "dimensions": {"radius": 15.5}, "precision": 3})"}},
       "Let me calculate that area for you."},
  };
  for (const CoderCase& c : cases) {
    SCOPED_TRACE(c.id);
    ParsedMessage msg = ExpectSplitIndependent(Coder(), c.output, /*max_len_3way=*/0, /*num_random=*/60);
    EXPECT_EQ(msg.content, c.content);
    ASSERT_EQ(msg.tool_calls.size(), c.calls.size());
    for (size_t i = 0; i < c.calls.size(); ++i) {
      EXPECT_EQ(msg.tool_calls[i].name, c.calls[i].first);
      EXPECT_EQ(Args(msg.tool_calls[i]), OrderedJson::parse(c.calls[i].second));
      // vLLM builds arguments with json.dumps: the exact text matches too.
      EXPECT_EQ(msg.tool_calls[i].arguments, c.calls[i].second);
    }
  }
}

TEST(Qwen3CoderToolParserTest, VllmFallbackWithoutToolCallTags) {
  ParsedMessage msg = ExpectSplitIndependent(
      Coder(), "<function=get_current_weather>\n<parameter=city>\nDallas\n</parameter>\n<parameter=state>\nTX\n"
               "</parameter>\n</function>",
      0, 60);
  ASSERT_EQ(msg.tool_calls.size(), 1u);
  EXPECT_EQ(msg.tool_calls[0].name, "get_current_weather");
}

TEST(Qwen3CoderToolParserTest, VllmMissingOpeningTagStreaming) {
  ParsedMessage msg = ExpectSplitIndependent(
      Coder(), "I'll check the weather for you.\n\n<function=get_current_weather>\n<parameter=city>\nDallas\n"
               "</parameter>\n<parameter=state>\nTX\n</parameter>\n<parameter=unit>\nfahrenheit\n</parameter>\n"
               "</function>\n</tool_call>",
      0, 60);
  EXPECT_NE(msg.content.find("I'll check the weather for you."), std::string::npos);
  ASSERT_EQ(msg.tool_calls.size(), 1u);
  EXPECT_EQ(Args(msg.tool_calls[0]), OrderedJson::parse(R"({"city": "Dallas", "state": "TX", "unit": "fahrenheit"})"));
}

TEST(Qwen3CoderToolParserTest, VllmTypeConversion) {
  const char* tools = R"([{"type": "function", "function": {"name": "test_types", "parameters": {"type": "object",
    "properties": {"int_param": {"type": "integer"}, "float_param": {"type": "float"},
    "bool_param": {"type": "boolean"}, "str_param": {"type": "string"}, "obj_param": {"type": "object"}}}}}])";
  ParsedMessage msg = ExpectSplitIndependent(
      Coder(tools), "<tool_call>\n<function=test_types>\n<parameter=int_param>\n42\n</parameter>\n"
                    "<parameter=float_param>\n3.14\n</parameter>\n<parameter=bool_param>\ntrue\n</parameter>\n"
                    "<parameter=str_param>\nhello world\n</parameter>\n<parameter=obj_param>\n{\"key\": \"value\"}\n"
                    "</parameter>\n</function>\n</tool_call>",
      0, 60);
  ASSERT_EQ(msg.tool_calls.size(), 1u);
  OrderedJson args = Args(msg.tool_calls[0]);
  EXPECT_EQ(args["int_param"], OrderedJson(42));
  EXPECT_EQ(args["float_param"], OrderedJson(3.14));
  EXPECT_EQ(args["bool_param"], OrderedJson(true));
  EXPECT_EQ(args["str_param"], OrderedJson("hello world"));
  EXPECT_EQ(args["obj_param"], OrderedJson::parse(R"({"key": "value"})"));
}

TEST(Qwen3CoderToolParserTest, VllmAnyOfStreaming) {
  const char* tools = R"([{"type": "function", "function": {"name": "search_web", "parameters": {"type": "object",
    "properties": {"query": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    "count": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": 5},
    "verbose": {"anyOf": [{"type": "boolean"}, {"type": "null"}]}}}}}])";
  ParsedMessage msg = ExpectSplitIndependent(
      Coder(tools), "<tool_call>\n<function=search_web>\n<parameter=query>\nvllm tool parser\n</parameter>\n"
                    "<parameter=count>\n10\n</parameter>\n<parameter=verbose>\ntrue\n</parameter>\n</function>\n"
                    "</tool_call>",
      0, 60);
  ASSERT_EQ(msg.tool_calls.size(), 1u);
  EXPECT_EQ(msg.tool_calls[0].arguments, R"({"query": "vllm tool parser", "count": 10, "verbose": true})");
}

TEST(Qwen3CoderToolParserTest, VllmMissingClosingParameterTag) {
  ParsedMessage msg = ExpectSplitIndependent(
      Coder(), "Let me check the weather for you:\n<tool_call>\n<function=get_current_weather>\n<parameter=city>\n"
               "Dallas\n<parameter=state>\nTX\n</parameter>\n<parameter=unit>\nfahrenheit\n</parameter>\n"
               "</function>\n</tool_call>",
      0, 60);
  ASSERT_EQ(msg.tool_calls.size(), 1u);
  EXPECT_EQ(Args(msg.tool_calls[0]), OrderedJson::parse(R"({"city": "Dallas", "state": "TX", "unit": "fahrenheit"})"));
  EXPECT_EQ(msg.content, "Let me check the weather for you:\n");
}

TEST(Qwen3CoderToolParserTest, VllmMalformedFunctionHeaderIsFiltered) {
  // vLLM PR #36774: a header without '>' must not crash nor produce a call.
  ParsedMessage msg = ExpectSplitIndependent(
      Coder(), "<tool_call>\n<function=bad_func_no_gt\n</function>\n</tool_call>\n<tool_call>\n"
               "<function=get_current_weather>\n<parameter=city>Dallas</parameter>\n<parameter=state>TX</parameter>\n"
               "</function>\n</tool_call>",
      0, 60);
  ASSERT_EQ(msg.tool_calls.size(), 1u);
  EXPECT_EQ(msg.tool_calls[0].name, "get_current_weather");
  EXPECT_EQ(msg.tool_calls[0].arguments, R"({"city": "Dallas", "state": "TX"})");
  // Our choice: the malformed block is released as text, verbatim.
  EXPECT_EQ(msg.content, "<tool_call>\n<function=bad_func_no_gt\n</function>\n</tool_call>\n");
}

TEST(Qwen3CoderToolParserTest, VllmNoDoubleEncoding) {
  const char* tools = R"([{"type": "function", "function": {"name": "update_record", "parameters": {
    "type": "object", "properties": {"data": {"anyOf": [{"type": "object"}, {"type": "null"}]}}}}},
    {"type": "function", "function": {"name": "greet", "parameters": {"type": "object",
    "properties": {"message": {"type": "string"}}}}}])";
  ParsedMessage msg = ExpectSplitIndependent(
      Coder(tools), "<tool_call>\n<function=update_record>\n<parameter=data>{\"key\": \"value\", \"count\": 42}"
                    "</parameter>\n</function>\n</tool_call><tool_call>\n<function=greet>\n"
                    "<parameter=message>hello world</parameter>\n</function>\n</tool_call>",
      0, 60);
  ASSERT_EQ(msg.tool_calls.size(), 2u);
  EXPECT_EQ(Args(msg.tool_calls[0])["data"], OrderedJson::parse(R"({"key": "value", "count": 42})"));
  EXPECT_EQ(msg.tool_calls[1].arguments, R"({"message": "hello world"})");
}

TEST(Qwen3CoderToolParserTest, MultiParamSingleDelta) {
  // vLLM PR #35615's deltas: three parameters arrive in one delta.
  std::vector<std::string> deltas = {"<tool_call>", "\n<function=get_current_weather>", "\n",
                                     "<parameter=city>\nDallas\n</parameter>\n<parameter=state>\nTX\n</parameter>"
                                     "\n<parameter=unit>\nfahrenheit\n</parameter>",
                                     "\n</function>", "\n</tool_call>"};
  std::string text;
  std::vector<size_t> cuts;
  for (const std::string& d : deltas) {
    if (!text.empty()) cuts.push_back(text.size());
    text += d;
  }
  ParsedMessage msg = testing::StreamWithCuts(Coder(), text, cuts);
  ASSERT_EQ(msg.tool_calls.size(), 1u);
  EXPECT_EQ(msg.tool_calls[0].arguments, R"({"city": "Dallas", "state": "TX", "unit": "fahrenheit"})");
}

TEST(Qwen3CoderToolParserTest, ArgumentsStreamIncrementally) {
  ResponseParser parser(Coder());
  ParsedDelta d1 = parser.Feed("<tool_call>\n<function=get_current_weather>\n<parameter=city>\nDal");
  ASSERT_EQ(d1.tool_calls.size(), 1u);
  EXPECT_EQ(d1.tool_calls[0].name, "get_current_weather");
  EXPECT_EQ(d1.tool_calls[0].arguments, "{");
  ParsedDelta d2 = parser.Feed("las\n</parameter>\n<parameter=state>\nTX\n");
  ASSERT_EQ(d2.tool_calls.size(), 1u);
  EXPECT_EQ(d2.tool_calls[0].arguments, R"("city": "Dallas")");
  ParsedDelta d3 = parser.Feed("</parameter>\n</function>\n</tool_call>");
  ASSERT_EQ(d3.tool_calls.size(), 1u);
  EXPECT_EQ(d3.tool_calls[0].arguments, R"(, "state": "TX"})");
  EXPECT_TRUE(parser.Finish().empty());
  EXPECT_TRUE(parser.has_tool_calls());
}

TEST(Qwen3CoderToolParserTest, TruncatedCallIsClosed) {
  // Generation stopped (max_tokens) inside a parameter: the call is still valid JSON.
  ParsedMessage msg = ExpectSplitIndependent(
      Coder(), "<tool_call>\n<function=calculate_area>\n<parameter=shape>\nsquare\n</parameter>\n"
               "<parameter=precision>\n4",
      0, 60);
  ASSERT_EQ(msg.tool_calls.size(), 1u);
  EXPECT_EQ(msg.tool_calls[0].arguments, R"({"shape": "square", "precision": 4})");
}

TEST(Qwen3CoderToolParserTest, NotAFunctionAfterToolCallIsText) {
  const char* text = "Use <tool_call> to call tools, e.g. <tool_call>{\"name\": \"x\"}</tool_call>.";
  ParsedMessage msg = ExpectSplitIndependent(Coder(), text, 0, 60);
  EXPECT_TRUE(msg.tool_calls.empty());
  EXPECT_EQ(msg.content, text);
}

TEST(Qwen3CoderToolParserTest, UnicodeAndEscapesInValues) {
  ParsedMessage msg = ExpectSplitIndependent(
      Coder(R"([{"type": "function", "function": {"name": "write_file", "parameters": {"type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}}}])"),
      "<tool_call>\n<function=write_file>\n<parameter=path>\n/tmp/日本語.txt\n</parameter>\n<parameter=content>\n"
      "line \"1\"\n\tline\\2 😀\n\n</parameter>\n</function>\n</tool_call>",
      0, 60);
  ASSERT_EQ(msg.tool_calls.size(), 1u);
  OrderedJson args = Args(msg.tool_calls[0]);
  EXPECT_EQ(args["path"], OrderedJson("/tmp/日本語.txt"));
  EXPECT_EQ(args["content"], OrderedJson("line \"1\"\n\tline\\2 😀\n"));  // one "\n" stripped each side
}

}  // namespace
}  // namespace pagellm::parsers
