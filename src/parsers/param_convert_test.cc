// Conversion rules of vLLM's Qwen3CoderToolParser._convert_param_value; the cases
// mirror vLLM's tests (type_conversion, anyof_type_conversion) plus the fallbacks.
#include "parsers/param_convert.h"

#include <gtest/gtest.h>

namespace pagellm::parsers {
namespace {

const char* kTools = R"([
  {"type": "function", "function": {"name": "t", "parameters": {"type": "object", "properties": {
    "i": {"type": "integer"}, "f": {"type": "float"}, "n": {"type": "number"},
    "b": {"type": "boolean"}, "s": {"type": "string"}, "o": {"type": "object"},
    "a": {"type": "array"}, "e": {"enum": ["x", "y"]}, "any": {"type": "any"},
    "opt_int": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": 5},
    "opt_str": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    "opt_arr": {"oneOf": [{"type": "null"}, {"type": "array", "items": {"type": "string"}}]},
    "type_list": {"type": ["null", "integer"]},
    "multi": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}}}}},
  {"name": "flat", "parameters": {"properties": {"k": {"type": "integer"}}}}
])";

class ParamConvertTest : public ::testing::Test {
 protected:
  OrderedJson tools_ = OrderedJson::parse(kTools);
  const OrderedJson* props_ = FindToolProperties(tools_, "t");
  OrderedJson Convert(const char* value, const char* param) { return ConvertParamValue(value, props_, param); }
};

TEST_F(ParamConvertTest, FindsPropertiesInBothToolShapes) {
  ASSERT_NE(props_, nullptr);
  EXPECT_TRUE(props_->contains("i"));
  const OrderedJson* flat = FindToolProperties(tools_, "flat");
  ASSERT_NE(flat, nullptr);
  EXPECT_EQ(ConvertParamValue("7", flat, "k"), OrderedJson(7));
  EXPECT_EQ(FindToolProperties(tools_, "missing"), nullptr);
  EXPECT_EQ(FindToolProperties(OrderedJson(), "t"), nullptr);
}

TEST_F(ParamConvertTest, VllmTypeConversionCase) {
  EXPECT_EQ(Convert("42", "i"), OrderedJson(42));
  EXPECT_EQ(Convert("3.14", "f"), OrderedJson(3.14));
  EXPECT_EQ(Convert("true", "b"), OrderedJson(true));
  EXPECT_EQ(Convert("hello world", "s"), OrderedJson("hello world"));
  EXPECT_EQ(Convert(R"({"key": "value"})", "o"), OrderedJson::parse(R"({"key": "value"})"));
}

TEST_F(ParamConvertTest, VllmAnyOfCase) {
  EXPECT_EQ(Convert("5", "opt_int"), OrderedJson(5));
  EXPECT_EQ(Convert("hello", "opt_str"), OrderedJson("hello"));
  EXPECT_EQ(Convert(R"(["a", "b", "c"])", "opt_arr"), OrderedJson::parse(R"(["a", "b", "c"])"));
  EXPECT_EQ(Convert("42", "type_list"), OrderedJson(42));
  EXPECT_EQ(Convert("some text", "multi"), OrderedJson("some text"));  // first non-null: string
}

TEST_F(ParamConvertTest, FallbacksAsVllm) {
  EXPECT_EQ(Convert("4.5", "i"), OrderedJson("4.5"));     // int() fails -> string
  EXPECT_EQ(Convert(" 12 ", "i"), OrderedJson(12));       // int() strips whitespace
  EXPECT_EQ(Convert("3.0", "n"), OrderedJson(3));         // integral float -> int
  EXPECT_TRUE(Convert("3.0", "n").is_number_integer());
  EXPECT_EQ(Convert("abc", "n"), OrderedJson("abc"));
  EXPECT_EQ(Convert("inf", "f"), OrderedJson("inf"));
  EXPECT_EQ(Convert("TRUE", "b"), OrderedJson(true));
  EXPECT_EQ(Convert("yes", "b"), OrderedJson(false));     // vLLM: not true/false -> false
  EXPECT_EQ(Convert("NULL", "s"), OrderedJson());         // null wins over the schema
  EXPECT_EQ(Convert("{bad", "o"), OrderedJson("{bad"));   // json fails -> string
  EXPECT_EQ(Convert("42", "s"), OrderedJson("42"));       // string stays string
  EXPECT_EQ(Convert("x", "e"), OrderedJson("x"));         // no type -> string
  EXPECT_EQ(Convert("[1, 2]", "any"), OrderedJson::parse("[1, 2]"));
  EXPECT_EQ(Convert("True", "any"), OrderedJson(true));
  EXPECT_EQ(Convert("plain", "any"), OrderedJson("plain"));
  EXPECT_EQ(Convert("42", "not_in_schema"), OrderedJson("42"));
  EXPECT_EQ(ConvertParamValue("42", nullptr, "i"), OrderedJson("42"));  // no tools given
}

}  // namespace
}  // namespace pagellm::parsers
