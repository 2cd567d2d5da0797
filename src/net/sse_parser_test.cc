#include "net/sse_parser.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace pagellm::net {
namespace {

std::vector<std::string> ParseAll(const std::string& bytes) {
  SseParser parser;
  std::vector<std::string> events;
  parser.Feed(bytes, &events);
  parser.Finish(&events);
  return events;
}

TEST(SseParserTest, OpenAiStream) {
  const std::string stream = "data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: [DONE]\n\n";
  EXPECT_EQ(ParseAll(stream), (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}", "[DONE]"}));
}

TEST(SseParserTest, AnySplitPointGivesTheSameEvents) {
  const std::string stream = "data: one\r\n\r\n: ping\n\nevent: x\nid: 3\ndata: two\ndata:three\n\ndata: four\r\r";
  const std::vector<std::string> expected = {"one", "two\nthree", "four"};
  ASSERT_EQ(ParseAll(stream), expected);
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    for (size_t cut2 = cut; cut2 <= stream.size(); cut2 += 3) {
      SseParser parser;
      std::vector<std::string> events;
      parser.Feed(stream.substr(0, cut), &events);
      parser.Feed(stream.substr(cut, cut2 - cut), &events);
      parser.Feed(stream.substr(cut2), &events);
      parser.Finish(&events);
      ASSERT_EQ(events, expected) << "cuts at " << cut << ", " << cut2;
    }
  }
}

TEST(SseParserTest, EventsAreEmittedAsSoonAsComplete) {
  SseParser parser;
  std::vector<std::string> events;
  parser.Feed("data: x\n", &events);
  EXPECT_TRUE(events.empty());
  parser.Feed("\n", &events);
  EXPECT_EQ(events, std::vector<std::string>{"x"});
}

TEST(SseParserTest, UnterminatedEventIsDeliveredAtEnd) {
  EXPECT_EQ(ParseAll("data: [DONE]"), std::vector<std::string>{"[DONE]"});
  EXPECT_EQ(ParseAll(": only a comment\n\n"), std::vector<std::string>{});
  EXPECT_EQ(ParseAll("data:\n\n"), std::vector<std::string>{""});  // empty data is still an event
}

}  // namespace
}  // namespace pagellm::net
