#include "engine/stop_checker.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace pagellm {
namespace {

constexpr int32_t kEos = 100;
constexpr int32_t kEos2 = 101;
const std::vector<int32_t> kEosIds = {kEos, kEos2};

struct StreamRun {
  std::vector<std::string> emitted;  // text_to_emit per step
  std::string streamed;              // concatenation of `emitted`
  StopResult last;
  int32_t num_steps = 0;
};

// Feeds (token, delta) pairs until the checker finishes or the input runs out.
StreamRun Feed(const SamplingParams& params,
               const std::vector<std::pair<int32_t, std::string>>& steps,
               int32_t max_model_len = 0, int32_t num_prompt_tokens = 0) {
  StopChecker checker(params, kEosIds, max_model_len, num_prompt_tokens);
  StreamRun run;
  for (const auto& [token, delta] : steps) {
    run.last = checker.Update(token, delta);
    run.emitted.push_back(run.last.text_to_emit);
    run.streamed += run.last.text_to_emit;
    ++run.num_steps;
    if (run.last.finished) {
      EXPECT_EQ(run.streamed, checker.output_text());  // everything is flushed at the end
      break;
    }
  }
  return run;
}

SamplingParams WithStop(std::vector<std::string> stop) {
  SamplingParams p;
  p.stop = std::move(stop);
  return p;
}

TEST(StopCheckerTest, EosStopsAndItsTextIsDropped) {
  const StreamRun run = Feed({}, {{1, "Hello"}, {2, " world"}, {kEos2, "<|endoftext|>"}, {3, "x"}});
  EXPECT_EQ(run.num_steps, 3);
  EXPECT_TRUE(run.last.finished);
  EXPECT_EQ(run.last.reason, FinishReason::kStop);
  EXPECT_FALSE(run.last.stop_reason.has_value());
  EXPECT_EQ(run.streamed, "Hello world");
  EXPECT_STREQ(FinishReasonName(run.last.reason), "stop");
}

TEST(StopCheckerTest, IgnoreEosKeepsGeneratingUntilMaxTokens) {
  SamplingParams p;
  p.ignore_eos = true;
  p.max_tokens = 3;
  const StreamRun run = Feed(p, {{1, "a"}, {kEos, "<e>"}, {2, "b"}, {3, "c"}});
  EXPECT_EQ(run.num_steps, 3);
  EXPECT_EQ(run.last.reason, FinishReason::kLength);
  EXPECT_EQ(run.streamed, "a<e>b");
}

TEST(StopCheckerTest, StopTokenIdReportsTheIdAndDropsItsText) {
  SamplingParams p;
  p.stop_token_ids = {7};
  const StreamRun run = Feed(p, {{1, "a"}, {7, "SEVEN"}, {2, "b"}});
  EXPECT_EQ(run.num_steps, 2);
  EXPECT_EQ(run.last.reason, FinishReason::kStop);
  ASSERT_TRUE(run.last.stop_reason.has_value());
  EXPECT_EQ(std::get<int32_t>(*run.last.stop_reason), 7);
  EXPECT_EQ(run.streamed, "a");
  p.include_stop_str_in_output = true;
  EXPECT_EQ(Feed(p, {{1, "a"}, {7, "SEVEN"}}).streamed, "aSEVEN");
}

TEST(StopCheckerTest, MaxTokensAndMaxModelLenGiveLength) {
  SamplingParams p;
  p.max_tokens = 2;
  StreamRun run = Feed(p, {{1, "a"}, {2, "b"}, {3, "c"}});
  EXPECT_EQ(run.num_steps, 2);
  EXPECT_EQ(run.last.reason, FinishReason::kLength);
  EXPECT_EQ(run.streamed, "ab");
  // Context of 10 with a 7-token prompt leaves room for 3 tokens.
  run = Feed({}, {{1, "a"}, {2, "b"}, {3, "c"}, {4, "d"}}, 10, 7);
  EXPECT_EQ(run.num_steps, 3);
  EXPECT_EQ(run.last.reason, FinishReason::kLength);
  EXPECT_STREQ(FinishReasonName(run.last.reason), "length");
  // Length is checked before EOS, as in vLLM's check_stop.
  p.max_tokens = 2;
  run = Feed(p, {{1, "a"}, {kEos, ""}});
  EXPECT_EQ(run.last.reason, FinishReason::kLength);
}

TEST(StopCheckerTest, StopStringInsideOneDeltaTruncatesBeforeIt) {
  const StreamRun run = Feed(WithStop({"STOP"}), {{1, "abc"}, {2, "dSTOPef"}, {3, "g"}});
  EXPECT_EQ(run.num_steps, 2);
  EXPECT_EQ(run.last.reason, FinishReason::kStop);
  EXPECT_EQ(std::get<std::string>(*run.last.stop_reason), "STOP");
  EXPECT_EQ(run.streamed, "abcd");
}

TEST(StopCheckerTest, StopStringAcrossTokensIsHeldBackThenCut) {
  const StreamRun run = Feed(WithStop({"</end>"}), {{1, "x</"}, {2, "en"}, {3, "d>tail"}});
  ASSERT_EQ(run.num_steps, 3);
  EXPECT_EQ(run.emitted[0], "x");  // "</" could start the stop string: held
  EXPECT_EQ(run.emitted[1], "");   // "</en" still could
  EXPECT_EQ(run.emitted[2], "");   // completed: cut before it
  EXPECT_EQ(run.streamed, "x");
  EXPECT_EQ(run.last.reason, FinishReason::kStop);
}

TEST(StopCheckerTest, HeldBackTextIsReleasedWhenItStopsMatching) {
  const StreamRun run = Feed(WithStop({"</end>"}), {{1, "a</e"}, {2, "x"}, {3, "<"}, {4, "b"}});
  ASSERT_EQ(run.num_steps, 4);
  EXPECT_FALSE(run.last.finished);
  EXPECT_EQ(run.emitted[0], "a");
  EXPECT_EQ(run.emitted[1], "</ex");
  EXPECT_EQ(run.emitted[2], "");
  EXPECT_EQ(run.emitted[3], "<b");
}

TEST(StopCheckerTest, HeldBackTextIsFlushedWhenAnotherReasonFinishes) {
  SamplingParams p = WithStop({"STOP"});
  p.max_tokens = 2;
  const StreamRun run = Feed(p, {{1, "a"}, {2, "ST"}});
  EXPECT_EQ(run.last.reason, FinishReason::kLength);
  EXPECT_EQ(run.emitted[1], "ST");
  // EOS after a partial match also releases it.
  EXPECT_EQ(Feed(WithStop({"STOP"}), {{1, "aS"}, {kEos, ""}}).streamed, "aS");
}

TEST(StopCheckerTest, StopStringOverridesLength) {
  SamplingParams p = WithStop({"!"});
  p.max_tokens = 1;
  const StreamRun run = Feed(p, {{1, "hi!"}});
  EXPECT_EQ(run.last.reason, FinishReason::kStop);
  EXPECT_EQ(run.streamed, "hi");
}

TEST(StopCheckerTest, IncludeStopStrKeepsItAndHoldsNothingBack) {
  SamplingParams p = WithStop({"</end>"});
  p.include_stop_str_in_output = true;
  const StreamRun run = Feed(p, {{1, "x</"}, {2, "end>tail"}});
  EXPECT_EQ(run.emitted[0], "x</");
  EXPECT_EQ(run.streamed, "x</end>");
  EXPECT_EQ(std::get<std::string>(*run.last.stop_reason), "</end>");
}

TEST(StopCheckerTest, EarliestOfSeveralStopStringsWins) {
  const StreamRun run = Feed(WithStop({"world", "lo"}), {{1, "hello world"}});
  EXPECT_EQ(std::get<std::string>(*run.last.stop_reason), "lo");
  EXPECT_EQ(run.streamed, "hel");
}

TEST(StopCheckerTest, HoldsLongestPartialPrefixAmongStopStrings) {
  const StreamRun run = Feed(WithStop({"abcd", "cx"}), {{1, "zzab"}, {2, "c"}, {3, "q"}});
  EXPECT_EQ(run.emitted[0], "zz");   // "ab" may become "abcd"
  EXPECT_EQ(run.emitted[1], "");     // "abc" may too (and "c" may become "cx")
  EXPECT_EQ(run.emitted[2], "abcq");
}

// A grammar that finished ends the sequence with a possible stop-string start held back:
// that text is the output's end, not dropped.
TEST(StopCheckerTest, FinishHeldBackReleasesThePartialMatch) {
  SamplingParams p = WithStop({"}\n"});
  StopChecker checker(p, {}, 0, 4);
  EXPECT_EQ(checker.Update(1, "{\"a\": 1").text_to_emit, "{\"a\": 1");
  EXPECT_EQ(checker.Update(2, "}").text_to_emit, "");
  EXPECT_TRUE(checker.holds_back());
  EXPECT_EQ(checker.FinishHeldBack(), "}");
  EXPECT_TRUE(checker.finished());
  EXPECT_FALSE(checker.holds_back());
  EXPECT_EQ(checker.output_text(), "{\"a\": 1}");
}

TEST(StopCheckerTest, MultiByteUtf8StopString) {
  const StreamRun run = Feed(WithStop({"終了"}), {{1, "データ\xe7\xb5"}, {2, "\x82\xe4\xba\x86残り"}});
  EXPECT_EQ(run.emitted[0], "データ");
  EXPECT_EQ(run.streamed, "データ");
  EXPECT_EQ(run.last.reason, FinishReason::kStop);
}

TEST(StopCheckerTest, MinTokensSuppressesEosStopIdsAndStopStrings) {
  SamplingParams p = WithStop({"STOP"});
  p.min_tokens = 2;
  p.stop_token_ids = {7};
  // Tokens 1 and 2 are within min_tokens: EOS, stop id and "STOP" are all ignored.
  StreamRun run = Feed(p, {{kEos, "e"}, {7, "STOP"}, {3, "x"}, {kEos, ""}});
  EXPECT_EQ(run.num_steps, 4);
  EXPECT_EQ(run.last.reason, FinishReason::kStop);
  EXPECT_EQ(run.streamed, "eSTOPx");
  // A stop string completed after min_tokens counts even if it began before.
  run = Feed(p, {{1, "a"}, {2, "ST"}, {3, "OP"}});
  EXPECT_EQ(run.num_steps, 3);
  EXPECT_EQ(run.last.reason, FinishReason::kStop);
  EXPECT_EQ(run.streamed, "a");
  // The third token may be a stop token.
  run = Feed(p, {{1, "a"}, {2, "b"}, {7, "c"}});
  EXPECT_EQ(run.last.reason, FinishReason::kStop);
  EXPECT_EQ(std::get<int32_t>(*run.last.stop_reason), 7);
}

TEST(StopCheckerTest, UnfinishedStreamsEverythingWithoutStops) {
  const StreamRun run = Feed({}, {{1, "a"}, {2, "b"}});
  EXPECT_FALSE(run.last.finished);
  EXPECT_EQ(run.last.reason, FinishReason::kNone);
  EXPECT_EQ(run.streamed, "ab");
}

}  // namespace
}  // namespace pagellm
