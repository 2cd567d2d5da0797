// Golden cases ported as data from vLLM tests/reasoning/test_qwen3_reasoning_parser.py
// (None there is "" here). Each runs non-streaming and under every split (streaming).
#include "parsers/reasoning_parser.h"

#include <gtest/gtest.h>

#include "parsers/test_util.h"

namespace pagellm::parsers {
namespace {

using testing::ExpectSplitIndependent;
using testing::Options;

struct ReasoningCase {
  const char* id;
  const char* output;
  const char* reasoning;
  const char* content;
};

const ReasoningCase kVllmCases[] = {
    {"without_start_token", "This is a reasoning section</think>This is the rest", "This is a reasoning section",
     "This is the rest"},
    {"without_start_token_complete_reasoning", "This is a reasoning section</think>", "This is a reasoning section",
     ""},
    {"with_think", "<think>This is a reasoning section</think>This is the rest", "This is a reasoning section",
     "This is the rest"},
    {"without_think", "This is the rest", "This is the rest", ""},
    {"complete_reasoning", "<think>This is a reasoning section</think>", "This is a reasoning section", ""},
    {"multiline_reasoning", "<think>This is a reasoning\nsection</think>This is the rest\nThat",
     "This is a reasoning\nsection", "This is the rest\nThat"},
    {"only_open_tag", "<think>This is a reasoning section", "This is a reasoning section", ""},
    {"truncated_no_start_token", "This is a reasoning section", "This is a reasoning section", ""},
};

TEST(ReasoningParserTest, VllmGoldenCases) {
  for (const ReasoningCase& c : kVllmCases) {
    SCOPED_TRACE(c.id);
    ParsedMessage msg = ExpectSplitIndependent(Options(ReasoningParserKind::kQwen3, ToolParserKind::kNone), c.output);
    EXPECT_EQ(msg.reasoning, c.reasoning);
    EXPECT_EQ(msg.content, c.content);
    EXPECT_TRUE(msg.tool_calls.empty());
  }
}

TEST(ReasoningParserTest, VllmMultiTokenDeltas) {
  struct DeltaCase {
    std::vector<std::string> deltas;
    const char* reasoning;
    const char* content;
  };
  const DeltaCase cases[] = {
      {{"<think>This is a reasoning section", "</think>", "This is the rest"}, "This is a reasoning section",
       "This is the rest"},
      {{"reasoning section", "</think>This is the rest"}, "reasoning section", "This is the rest"},
      {{"<think>reasoning</think>"}, "reasoning", ""},
      {{"reasoning section", "</think>content"}, "reasoning section", "content"},
  };
  for (const DeltaCase& c : cases) {
    std::string text;
    std::vector<size_t> cuts;
    for (const std::string& d : c.deltas) {
      if (!text.empty()) cuts.push_back(text.size());
      text += d;
    }
    ParsedMessage msg =
        testing::StreamWithCuts(Options(ReasoningParserKind::kQwen3, ToolParserKind::kNone), text, cuts);
    EXPECT_EQ(msg.reasoning, c.reasoning) << text;
    EXPECT_EQ(msg.content, c.content) << text;
  }
}

TEST(ReasoningParserTest, VllmThinkingDisabledIsAllContent) {
  const char* tool_text =
      "I need to read the file.\n\n<tool_call>\n<function=bash>\n<parameter=command>\ncat /etc/hosts\n"
      "</parameter>\n</function>\n</tool_call>";
  for (const char* text : {"This is plain content", "Some output without think tokens", tool_text}) {
    ParsedMessage msg = ExpectSplitIndependent(
        Options(ReasoningParserKind::kQwen3, ToolParserKind::kNone, "[]", /*starts_in_reasoning=*/false), text);
    EXPECT_EQ(msg.reasoning, "");
    EXPECT_EQ(msg.content, text);
  }
}

TEST(ReasoningParserTest, NoParserIsAllContent) {
  ParsedMessage msg = ResponseParser::Parse(Options(ReasoningParserKind::kNone, ToolParserKind::kNone),
                                            "<think>a</think>b");
  EXPECT_EQ(msg.content, "<think>a</think>b");
  EXPECT_EQ(msg.reasoning, "");
}

TEST(ReasoningParserTest, HoldsBackPartialTags) {
  ReasoningParser p(ReasoningParserKind::kQwen3, /*starts_in_reasoning=*/true);
  std::vector<ReasoningPiece> pieces;
  p.Feed("<thi", &pieces);
  EXPECT_TRUE(pieces.empty());  // might be <think>
  p.Feed("nk>Let me think</th", &pieces);
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0].kind, ReasoningPiece::Kind::kReasoning);
  EXPECT_EQ(pieces[0].text, "Let me think");
  p.Feed("e", &pieces);  // "</the" is not a tag prefix: released as reasoning
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0].text, "Let me think</the");
  p.Feed("n</think>\n\nHi", &pieces);
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces[0].text, "Let me think</then");
  EXPECT_EQ(pieces[1].kind, ReasoningPiece::Kind::kReasoningEnd);
  EXPECT_EQ(pieces[2].kind, ReasoningPiece::Kind::kContent);
  EXPECT_EQ(pieces[2].text, "\n\nHi");
  EXPECT_FALSE(p.in_reasoning());
}

TEST(ReasoningParserTest, LaterTagsInContentAreText) {
  ParsedMessage msg = ExpectSplitIndependent(Options(ReasoningParserKind::kQwen3, ToolParserKind::kNone),
                                             "<think>r</think>c <think>x</think> y");
  EXPECT_EQ(msg.reasoning, "r");
  EXPECT_EQ(msg.content, "c <think>x</think> y");
}

TEST(ReasoningParserTest, PromptEndsReasoning) {
  EXPECT_TRUE(PromptEndsReasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  EXPECT_FALSE(PromptEndsReasoning("<|im_start|>assistant\n<think>\n"));
  EXPECT_FALSE(PromptEndsReasoning("<|im_start|>assistant\n"));
  // A closed block from an earlier turn does not count: only the prompt's end matters.
  EXPECT_FALSE(PromptEndsReasoning("<think>a</think>b<|im_end|>\n<|im_start|>assistant\n"));
}

TEST(ReasoningParserTest, KindNames) {
  EXPECT_EQ(*ParseReasoningParserKind("qwen3"), ReasoningParserKind::kQwen3);
  EXPECT_EQ(*ParseReasoningParserKind(""), ReasoningParserKind::kNone);
  EXPECT_FALSE(ParseReasoningParserKind("nope").ok());
}

}  // namespace
}  // namespace pagellm::parsers
