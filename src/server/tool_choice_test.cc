#include "server/tool_choice.h"

#include <gtest/gtest.h>

namespace pagellm::server {
namespace {

const OrderedJson kTools = OrderedJson::parse(R"([
  {"type": "function", "function": {"name": "get_weather",
   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
  {"type": "function", "function": {"name": "now"}}])");

TEST(ToolChoiceTest, ParsesEveryForm) {
  for (const char* mode : {"auto", "none", "required"}) {
    auto tc = ParseToolChoice(OrderedJson(mode));
    ASSERT_TRUE(tc.ok()) << mode;
    EXPECT_EQ(tc->mode, mode);
  }
  auto named = ParseToolChoice(OrderedJson::parse(R"({"type": "function", "function": {"name": "now"}})"));
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->mode, "named");
  EXPECT_EQ(named->name, "now");
  EXPECT_TRUE(named->forces_call());
  for (const char* bad : {R"("always")", R"({"type": "function"})", R"({"type": "x", "function": {"name": "f"}})", "3"}) {
    EXPECT_FALSE(ParseToolChoice(OrderedJson::parse(bad)).ok()) << bad;
  }
}

TEST(ToolChoiceTest, NamedKeepsOnlyThatToolAndRequiredKeepsAll) {
  auto named = ForcedToolCallConstraint({"named", "get_weather"}, kTools, "hermes");
  ASSERT_TRUE(named.ok()) << named.status().message();
  EXPECT_EQ(named->kind, StructuredOutputKind::kToolCalls);
  OrderedJson spec = OrderedJson::parse(named->spec);
  EXPECT_EQ(spec["format"], "hermes");
  EXPECT_EQ(spec["required"], false);
  ASSERT_EQ(spec["tools"].size(), 1u);
  EXPECT_EQ(spec["tools"][0]["parameters"]["required"][0], "city");

  auto required = ForcedToolCallConstraint({"required", ""}, kTools, "qwen3_coder");
  ASSERT_TRUE(required.ok());
  spec = OrderedJson::parse(required->spec);
  EXPECT_EQ(spec["required"], true);
  ASSERT_EQ(spec["tools"].size(), 2u);
  EXPECT_EQ(spec["tools"][1]["parameters"], (OrderedJson{{"type", "object"}}));  // no parameters: any object
}

TEST(ToolChoiceTest, UnknownNameOrNoToolsIsAnErrorNamingToolChoice) {
  auto unknown = ForcedToolCallConstraint({"named", "fly"}, kTools, "hermes");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message().rfind("tool_choice:", 0), 0u);
  EXPECT_FALSE(ForcedToolCallConstraint({"required", ""}, OrderedJson(), "hermes").ok());
}

TEST(ToolChoiceTest, AutoConstrainsOnlyStrictTools) {
  auto none = StrictAutoToolCallConstraint(kTools, "hermes");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());  // no strict tool: nothing to constrain
  OrderedJson tools = kTools;
  tools[0]["function"]["strict"] = true;
  auto strict = StrictAutoToolCallConstraint(tools, "qwen3_coder");
  ASSERT_TRUE(strict.ok() && strict->has_value());
  OrderedJson spec = OrderedJson::parse((*strict)->spec);
  EXPECT_EQ(spec["mode"], "auto");
  EXPECT_EQ(spec["format"], "qwen3_coder");
  ASSERT_EQ(spec["tools"].size(), 1u);
  EXPECT_EQ(spec["tools"][0]["name"], "get_weather");
  auto other = StrictAutoToolCallConstraint(tools, "llama3_json");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("llama3_json"), std::string::npos);
}

}  // namespace
}  // namespace pagellm::server
