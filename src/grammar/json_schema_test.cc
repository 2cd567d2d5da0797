// JSON Schema compiler: accepted instances match, invalid ones do not, refusals name
// the keyword.
#include <gtest/gtest.h>

#include "grammar/json_schema.h"
#include "grammar/test_support.h"

namespace pagellm::grammar {
namespace {

using testing::Matches;
using testing::MustCompile;

std::shared_ptr<const CompiledGrammar> Schema(const char* text, JsonWhitespace ws = {}) {
  auto g = JsonSchemaToGrammar(OrderedJson::parse(text), ws);
  if (!g.ok()) throw std::runtime_error(g.status().ToString());
  return MustCompile(*g);
}

Status SchemaError(const char* text) {
  auto g = JsonSchemaToGrammar(OrderedJson::parse(text), {});
  return g.ok() ? OkStatus() : g.status();
}

TEST(JsonSchemaTest, ObjectWithRequiredAndOptionalProperties) {
  auto v = testing::SmallVocab();
  auto g = Schema(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"},
                     "c":{"type":"boolean"}},"required":["b"]})");
  EXPECT_TRUE(Matches(g, *v, R"({"b":"x"})"));
  EXPECT_TRUE(Matches(g, *v, R"({"a":1,"b":"x","c":true})"));
  EXPECT_TRUE(Matches(g, *v, R"({"a": -12, "b": "", "c": false})"));
  EXPECT_TRUE(Matches(g, *v, "{\n  \"b\": \"x\"\n}"));
  EXPECT_FALSE(Matches(g, *v, R"({"a":1})"));          // b required
  EXPECT_FALSE(Matches(g, *v, R"({"b":"x",})"));
  EXPECT_FALSE(Matches(g, *v, R"({,"b":"x"})"));
  EXPECT_FALSE(Matches(g, *v, R"({"b":"x","d":1})"));  // only declared keys
  EXPECT_FALSE(Matches(g, *v, R"({"a":1.5,"b":"x"})"));
  EXPECT_FALSE(Matches(g, *v, "{\"b\":\"x\"" + std::string(30, ' ') + "}"));  // whitespace is bounded
}

TEST(JsonSchemaTest, WhitespaceOptions) {
  auto v = testing::SmallVocab();
  JsonWhitespace none;
  none.disable = true;
  auto g = Schema(R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})", none);
  EXPECT_TRUE(Matches(g, *v, R"({"a":1})"));
  EXPECT_FALSE(Matches(g, *v, R"({"a": 1})"));
  JsonWhitespace custom;
  custom.pattern = "[ ]{0,2}";
  auto h = Schema(R"({"type":"array","items":{"type":"null"}})", custom);
  EXPECT_TRUE(Matches(h, *v, "[  null , null]"));
  EXPECT_FALSE(Matches(h, *v, "[\nnull]"));
}

TEST(JsonSchemaTest, StringsLengthsPatternsFormats) {
  auto v = testing::SmallVocab();
  auto len = Schema(R"({"type":"string","minLength":2,"maxLength":3})");
  EXPECT_TRUE(Matches(len, *v, R"("ab")"));
  EXPECT_TRUE(Matches(len, *v, "\"a\xe4\xbd\xa0\""));  // code points, not bytes
  EXPECT_TRUE(Matches(len, *v, R"("a\n\u00e9")"));
  EXPECT_FALSE(Matches(len, *v, R"("a")"));
  EXPECT_FALSE(Matches(len, *v, R"("abcd")"));
  EXPECT_FALSE(Matches(len, *v, R"("\ud800ab")"));  // no lone surrogates
  auto pat = Schema(R"({"type":"string","pattern":"^[A-Z]{2}-\\d+$"})");
  EXPECT_TRUE(Matches(pat, *v, R"("AB-12")"));
  EXPECT_FALSE(Matches(pat, *v, R"("AB-")"));
  auto quote = Schema(R"({"type":"string","pattern":"^a\"b$"})");
  EXPECT_TRUE(Matches(quote, *v, R"("a\"b")"));
  auto search = Schema(R"({"type":"string","pattern":"x"})");
  EXPECT_TRUE(Matches(search, *v, R"("aaxbb")"));
  EXPECT_FALSE(Matches(search, *v, R"("aabb")"));
  auto date = Schema(R"({"type":"string","format":"date-time"})");
  EXPECT_TRUE(Matches(date, *v, R"("2024-01-31T23:59:59Z")"));
  EXPECT_FALSE(Matches(date, *v, R"("2024-13-01T00:00:00Z")"));
  auto uuid = Schema(R"({"type":"string","format":"uuid"})");
  EXPECT_TRUE(Matches(uuid, *v, R"("123e4567-e89b-12d3-a456-426614174000")"));
}

TEST(JsonSchemaTest, IntegerBoundsExhaustive) {
  auto v = testing::SmallVocab();
  struct Case {
    const char* schema;
    int lo, hi;
  };
  for (const Case& c : {Case{R"({"type":"integer","minimum":-37,"maximum":125})", -37, 125},
                        Case{R"({"type":"integer","exclusiveMinimum":3,"exclusiveMaximum":100})", 4, 99},
                        Case{R"({"type":"integer","minimum":95})", 95, 100000},
                        Case{R"({"type":"integer","maximum":-5})", -100000, -5},
                        Case{R"({"type":"integer","minimum":0,"maximum":0})", 0, 0}}) {
    auto g = Schema(c.schema);
    for (int i = -1200; i <= 1200; ++i) {
      EXPECT_EQ(Matches(g, *v, std::to_string(i)), i >= c.lo && i <= c.hi) << c.schema << " " << i;
    }
    EXPECT_FALSE(Matches(g, *v, "01"));
    EXPECT_FALSE(Matches(g, *v, "-0"));
  }
}

TEST(JsonSchemaTest, NumberBoundsNeverAdmitOutOfRangeValues) {
  auto v = testing::SmallVocab();
  auto g = Schema(R"({"type":"number","minimum":-2.5,"exclusiveMaximum":3})");
  for (int i = -500; i <= 500; ++i) {
    for (const char* frac : {"", ".0", ".5", ".99"}) {
      for (const char* sign : {"", "-"}) {
        std::string text = std::string(sign) + std::to_string(std::abs(i) / 100) + frac;
        double x = std::stod(text);
        if (Matches(g, *v, text)) {
          EXPECT_TRUE(x >= -2.5 && x < 3) << text;
        }
      }
    }
  }
  EXPECT_TRUE(Matches(g, *v, "2.99"));
  EXPECT_TRUE(Matches(g, *v, "-1.5"));
  EXPECT_TRUE(Matches(g, *v, "-2"));
  auto any = Schema(R"({"type":"number"})");
  EXPECT_TRUE(Matches(any, *v, "-1.25e+10"));
  EXPECT_FALSE(Matches(any, *v, "1."));
}

TEST(JsonSchemaTest, ArraysTuplesEnumsConst) {
  auto v = testing::SmallVocab();
  auto arr = Schema(R"({"type":"array","items":{"enum":["a",1,null]},"minItems":1,"maxItems":3})");
  EXPECT_TRUE(Matches(arr, *v, R"(["a"])"));
  EXPECT_TRUE(Matches(arr, *v, R"([1, null, "a"])"));
  EXPECT_FALSE(Matches(arr, *v, "[]"));
  EXPECT_FALSE(Matches(arr, *v, R"([1,1,1,1])"));
  EXPECT_FALSE(Matches(arr, *v, R"(["b"])"));
  auto tuple = Schema(R"({"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}],"items":false})");
  EXPECT_TRUE(Matches(tuple, *v, R"([1,"x"])"));
  EXPECT_TRUE(Matches(tuple, *v, R"([1])"));
  EXPECT_TRUE(Matches(tuple, *v, R"([])"));
  EXPECT_FALSE(Matches(tuple, *v, R"([1,"x",2])"));
  auto c = Schema(R"({"const":{"k":[1,"two"]}})");
  EXPECT_TRUE(Matches(c, *v, R"({"k":[1,"two"]})"));
}

TEST(JsonSchemaTest, RefsUnionsAllOf) {
  auto v = testing::SmallVocab();
  auto tree = Schema(R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
      "kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"]}},"$ref":"#/$defs/node"})");
  EXPECT_TRUE(Matches(tree, *v, R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[]}]})"));  // declared order
  EXPECT_FALSE(Matches(tree, *v, R"({"v":1,"kids":[{}]})"));
  auto any = Schema(R"({"anyOf":[{"type":"string"},{"type":"integer"}]})");
  EXPECT_TRUE(Matches(any, *v, R"("s")"));
  EXPECT_TRUE(Matches(any, *v, "7"));
  EXPECT_FALSE(Matches(any, *v, "true"));
  auto one = Schema(R"({"oneOf":[{"type":"object","properties":{"kind":{"const":"a"},"x":{"type":"integer"}},
      "required":["kind"]},{"type":"object","properties":{"kind":{"const":"b"}},"required":["kind"]}]})");
  EXPECT_TRUE(Matches(one, *v, R"({"kind":"b"})"));
  auto all = Schema(R"({"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},
      {"properties":{"b":{"type":"string"}},"required":["b"]}]})");
  EXPECT_TRUE(Matches(all, *v, R"({"a":1,"b":"x"})"));
  EXPECT_FALSE(Matches(all, *v, R"({"a":1})"));
  auto free = Schema(R"({"type":"object","additionalProperties":{"type":"integer"}})");
  EXPECT_TRUE(Matches(free, *v, R"({"x":1,"y":2})"));
  EXPECT_FALSE(Matches(free, *v, R"({"x":"1"})"));
}

TEST(JsonSchemaTest, RefusalsNameTheKeyword) {
  struct Case {
    const char* schema;
    const char* keyword;
  };
  for (const Case& c : {Case{R"({"not":{"type":"string"}})", "'not'"},
                        Case{R"({"type":"array","uniqueItems":true})", "uniqueItems"},
                        Case{R"({"type":"integer","multipleOf":3})", "multipleOf"},
                        Case{R"({"type":"object","patternProperties":{"a":{}}})", "patternProperties"},
                        Case{R"({"if":{},"then":{}})", "'if'"},
                        Case{R"({"oneOf":[{"type":"string"},{"type":"string","maxLength":3}]})", "oneOf"},
                        Case{R"({"$ref":"http://x/y.json"})", "local"},
                        Case{R"({"type":"string","format":"idn-email"})", "idn-email"},
                        Case{R"j({"type":"string","pattern":"(?=a)"})j", "lookahead"}}) {
    Status s = SchemaError(c.schema);
    EXPECT_FALSE(s.ok()) << c.schema;
    EXPECT_NE(s.message().find(c.keyword), std::string::npos) << s.message();
  }
}

// OpenAPI's numeric formats, as ajv-formats checks them: int32 is a 32-bit integer,
// int64 any integer (also on "type": "number").
TEST(JsonSchemaTest, NumericFormatsBoundIntegers) {
  auto v = testing::SmallVocab();
  auto i32 = Schema(R"({"type":"integer","format":"int32"})");
  EXPECT_TRUE(Matches(i32, *v, "2147483647"));
  EXPECT_TRUE(Matches(i32, *v, "-2147483648"));
  EXPECT_FALSE(Matches(i32, *v, "2147483648"));
  EXPECT_FALSE(Matches(i32, *v, "-2147483649"));
  auto bounded = Schema(R"({"type":"integer","format":"int32","minimum":5})");
  EXPECT_FALSE(Matches(bounded, *v, "4"));
  EXPECT_FALSE(Matches(bounded, *v, "40000000000"));
  auto i64 = Schema(R"({"type":"number","format":"int64"})");
  EXPECT_TRUE(Matches(i64, *v, "-12"));
  EXPECT_FALSE(Matches(i64, *v, "1.5"));
  auto dbl = Schema(R"({"type":"number","format":"double"})");
  EXPECT_TRUE(Matches(dbl, *v, "1.5"));
}

}  // namespace
}  // namespace pagellm::grammar
