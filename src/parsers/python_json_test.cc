// Expected strings were produced by CPython's json.dumps(json.loads(in),
// ensure_ascii=False) (/usr/bin/python3), the serializer vLLM uses for arguments.
#include "parsers/python_json.h"

#include <gtest/gtest.h>

namespace pagellm::parsers {
namespace {

struct Case {
  const char* input;
  const char* expected;
};

TEST(PythonJsonTest, MatchesCPythonJsonDumps) {
  const Case cases[] = {
      {R"({"a":[1,2,{"b":null}],"c":"é\n\"q\"","d":true,"e":1.5,"f":-3})",
       R"({"a": [1, 2, {"b": null}], "c": "é\n\"q\"", "d": true, "e": 1.5, "f": -3})"},
      {R"({"x":1e20,"y":0.1,"z":[],"w":{}})", R"({"x": 1e+20, "y": 0.1, "z": [], "w": {}})"},
      {R"("tab\there \u0001 \u2028 😀")", "\"tab\\there \\u0001 \u2028 😀\""},
      {R"({"dup":1,"dup":2})", R"({"dup": 2})"},
      {"[1.0, 100000000000.5, 3.14159]", "[1.0, 100000000000.5, 3.14159]"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(PythonJsonDumps(OrderedJson::parse(c.input)), c.expected) << c.input;
  }
}

}  // namespace
}  // namespace pagellm::parsers
