#include "parsers/test_util.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace pagellm::parsers::testing {

ParsedMessage StreamWithCuts(const ResponseParserOptions& opts, std::string_view text,
                             const std::vector<size_t>& cuts) {
  ResponseParser parser(opts);
  ParsedMessage rebuilt;
  auto absorb = [&](const ParsedDelta& d) {
    rebuilt.reasoning += d.reasoning;
    rebuilt.content += d.content;
    for (const ToolCallDelta& tc : d.tool_calls) {
      if (tc.index == static_cast<int>(rebuilt.tool_calls.size())) {
        EXPECT_FALSE(tc.id.empty()) << "first delta of a call must carry its id";
        EXPECT_FALSE(tc.name.empty()) << "first delta of a call must carry its name";
        rebuilt.tool_calls.push_back(ToolCall{tc.id, tc.name, ""});
      } else {
        ASSERT_EQ(tc.index, static_cast<int>(rebuilt.tool_calls.size()) - 1) << "calls must be sequential";
        EXPECT_TRUE(tc.id.empty() && tc.name.empty()) << "id/name are sent once";
      }
      rebuilt.tool_calls.back().arguments += tc.arguments;
    }
  };
  size_t prev = 0;
  for (size_t cut : cuts) {
    absorb(parser.Feed(text.substr(prev, cut - prev)));
    prev = cut;
  }
  absorb(parser.Feed(text.substr(prev)));
  absorb(parser.Finish());
  ExpectSameMessage(parser.message(), rebuilt, "deltas vs message()");
  for (size_t i = 0; i < rebuilt.tool_calls.size(); ++i) {
    EXPECT_EQ(rebuilt.tool_calls[i].id, parser.message().tool_calls[i].id);
  }
  return rebuilt;
}

void ExpectSameMessage(const ParsedMessage& expected, const ParsedMessage& actual, const std::string& where) {
  EXPECT_EQ(expected.reasoning, actual.reasoning) << where;
  EXPECT_EQ(expected.content, actual.content) << where;
  ASSERT_EQ(expected.tool_calls.size(), actual.tool_calls.size()) << where;
  for (size_t i = 0; i < expected.tool_calls.size(); ++i) {
    EXPECT_EQ(expected.tool_calls[i].name, actual.tool_calls[i].name) << where << " call " << i;
    EXPECT_EQ(expected.tool_calls[i].arguments, actual.tool_calls[i].arguments) << where << " call " << i;
  }
}

ParsedMessage ExpectSplitIndependent(const ResponseParserOptions& opts, std::string_view text,
                                     size_t max_len_3way, int num_random) {
  ParsedMessage expected = ResponseParser::Parse(opts, text);
  for (const ToolCall& call : expected.tool_calls) Args(call);
  std::vector<size_t> cuts;
  for (size_t i = 1; i < text.size(); ++i) cuts.push_back(i);
  ExpectSameMessage(expected, StreamWithCuts(opts, text, cuts), "1-byte deltas");
  for (size_t i = 1; i < text.size(); ++i) {
    ExpectSameMessage(expected, StreamWithCuts(opts, text, {i}), "2-way split at " + std::to_string(i));
    if (::testing::Test::HasFailure()) return expected;
  }
  if (text.size() <= max_len_3way) {
    for (size_t i = 1; i < text.size(); ++i) {
      for (size_t j = i + 1; j < text.size(); ++j) {
        ExpectSameMessage(expected, StreamWithCuts(opts, text, {i, j}),
                          "3-way split at " + std::to_string(i) + "," + std::to_string(j));
        if (::testing::Test::HasFailure()) return expected;
      }
    }
  }
  std::mt19937 rng(1234);
  for (int r = 0; r < num_random; ++r) {
    std::vector<size_t> random_cuts;
    size_t pos = 0;
    while (true) {
      pos += 1 + rng() % 7;
      if (pos >= text.size()) break;
      random_cuts.push_back(pos);
    }
    ExpectSameMessage(expected, StreamWithCuts(opts, text, random_cuts), "random split " + std::to_string(r));
    if (::testing::Test::HasFailure()) return expected;
  }
  return expected;
}

ResponseParserOptions Options(ReasoningParserKind reasoning, ToolParserKind tools, const char* tools_json,
                              bool starts_in_reasoning) {
  ResponseParserOptions opts;
  opts.reasoning_parser = reasoning;
  opts.tool_parser = tools;
  opts.tools_enabled = tools != ToolParserKind::kNone;
  opts.tools = OrderedJson::parse(tools_json);
  opts.starts_in_reasoning = starts_in_reasoning;
  return opts;
}

OrderedJson Args(const ToolCall& call) {
  OrderedJson args = OrderedJson::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(args.is_discarded()) << "arguments of " << call.name << " are not JSON: " << call.arguments;
  return args;
}

}  // namespace pagellm::parsers::testing
