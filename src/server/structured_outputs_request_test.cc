#include "server/structured_outputs_request.h"

#include <gtest/gtest.h>

namespace pagellm::server {
namespace {

StatusOr<std::optional<StructuredOutputsParams>> Parse(const char* body) {
  SamplingParams p;
  PAGELLM_RETURN_IF_ERROR(ParseStructuredOutputs(OrderedJson::parse(body), &p));
  return p.structured_outputs;
}

TEST(StructuredOutputsRequestTest, ResponseFormatKinds) {
  auto text = Parse(R"({"response_format":{"type":"text"}})");
  ASSERT_TRUE(text.ok());
  EXPECT_FALSE(text->has_value());
  auto obj = Parse(R"({"response_format":{"type":"json_object"}})");
  ASSERT_TRUE(obj.ok() && obj->has_value());
  EXPECT_EQ((*obj)->kind, StructuredOutputKind::kJsonObject);
  auto schema = Parse(R"({"response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,
      "schema":{"type":"object","properties":{"b":{},"a":{}}}}}})");
  ASSERT_TRUE(schema.ok() && schema->has_value());
  EXPECT_EQ((*schema)->kind, StructuredOutputKind::kJson);
  EXPECT_EQ((*schema)->spec, R"({"type":"object","properties":{"b":{},"a":{}}})");  // order kept
}

TEST(StructuredOutputsRequestTest, VllmObjectAndAliases) {
  auto re = Parse(R"({"structured_outputs":{"regex":"a+","disable_any_whitespace":true}})");
  ASSERT_TRUE(re.ok() && re->has_value());
  EXPECT_EQ((*re)->kind, StructuredOutputKind::kRegex);
  EXPECT_EQ((*re)->spec, "a+");
  EXPECT_TRUE((*re)->disable_any_whitespace);
  auto choice = Parse(R"({"guided_choice":["yes","no"]})");
  ASSERT_TRUE(choice.ok() && choice->has_value());
  EXPECT_EQ((*choice)->choice, (std::vector<std::string>{"yes", "no"}));
  auto json = Parse(R"({"guided_json":"{\"type\":\"integer\"}","guided_whitespace_pattern":" ?"})");
  ASSERT_TRUE(json.ok() && json->has_value());
  EXPECT_EQ((*json)->spec, R"({"type":"integer"})");
  EXPECT_EQ((*json)->whitespace_pattern, " ?");
  auto gram = Parse(R"({"structured_outputs":{"grammar":"root ::= \"a\""}})");
  ASSERT_TRUE(gram.ok() && gram->has_value());
  EXPECT_EQ((*gram)->kind, StructuredOutputKind::kGrammar);
}

TEST(StructuredOutputsRequestTest, StructuralTags) {
  // The tag's own checks (structures, triggers) run when the engine compiles it.
  auto rf = Parse(R"({"response_format":{"type":"structural_tag","structures":[{"begin":"<f>","schema":{},"end":"</f>"}],"triggers":["<f"]}})");
  ASSERT_TRUE(rf.ok() && rf->has_value());
  EXPECT_EQ((*rf)->kind, StructuredOutputKind::kStructuralTag);
  EXPECT_NE((*rf)->spec.find("\"triggers\""), std::string::npos);
  auto so = Parse(R"({"structured_outputs":{"structural_tag":"{\"structures\": [], \"triggers\": []}"}})");
  ASSERT_TRUE(so.ok() && so->has_value());
  EXPECT_EQ((*so)->kind, StructuredOutputKind::kStructuralTag);
  EXPECT_EQ((*so)->spec, R"({"structures": [], "triggers": []})");
}

TEST(StructuredOutputsRequestTest, WhatCannotBeHonouredIsAnError) {
  for (const char* bad : {R"({"response_format":{"type":"json_schema"}})",
                          R"({"response_format":{"type":"xml"}})",
                          R"({"response_format":"json"})",
                          R"({"structured_outputs":{"regex":"a","choice":["a"]}})",
                          R"({"structured_outputs":{"structural_tag":5}})",
                          R"({"structured_outputs":{"structural_tag":"{}","regex":"a"}})",
                          R"({"response_format":{"type":"json_object"},"guided_regex":"a"})",
                          R"({"guided_choice":[]})"}) {
    EXPECT_FALSE(Parse(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace pagellm::server
