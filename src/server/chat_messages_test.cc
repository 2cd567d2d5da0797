#include "server/chat_messages.h"

#include <gtest/gtest.h>

namespace pagellm::server {
namespace {

TEST(ChatMessagesTest, FlattensTextPartsAndNullContent) {
  OrderedJson in = OrderedJson::parse(R"([
    {"role": "system", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
    {"role": "assistant", "content": null},
    {"role": "user"}])");
  StatusOr<OrderedJson> out = NormalizeMessages(in);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0]["content"], "a\nb");
  EXPECT_EQ((*out)[1]["content"], "");
  EXPECT_EQ((*out)[2]["content"], "");
}

TEST(ChatMessagesTest, ParsesToolCallArgumentStrings) {
  OrderedJson in = OrderedJson::parse(R"([
    {"role": "assistant", "content": "", "tool_calls": [
      {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"city\": \"Paris\", \"n\": 2}"}},
      {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "not json"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"}])");
  StatusOr<OrderedJson> out = NormalizeMessages(in);
  ASSERT_TRUE(out.ok());
  const OrderedJson& args = (*out)[0]["tool_calls"][0]["function"]["arguments"];
  ASSERT_TRUE(args.is_object());
  EXPECT_EQ(args["city"], "Paris");
  EXPECT_EQ(args["n"], 2);
  EXPECT_EQ((*out)[0]["tool_calls"][1]["function"]["arguments"], "not json");
  EXPECT_EQ((*out)[1]["role"], "tool");
}

TEST(ChatMessagesTest, RejectsBadMessages) {
  EXPECT_FALSE(NormalizeMessages(OrderedJson::array()).ok());
  EXPECT_FALSE(NormalizeMessages(OrderedJson::parse(R"([{"content": "x"}])")).ok());
  Status s = NormalizeMessages(OrderedJson::parse(R"([{"role": "robot", "content": "x"}])")).status();
  EXPECT_EQ(s.message().rfind("messages[0].role:", 0), 0u) << s.message();
  s = NormalizeMessages(OrderedJson::parse(R"([{"role": "user", "content": [{"type": "image_url"}]}])")).status();
  EXPECT_FALSE(s.ok());
  EXPECT_FALSE(ValidateTools(OrderedJson::parse(R"([{"type": "function"}])")).ok());
  EXPECT_TRUE(ValidateTools(OrderedJson::parse(R"([{"type": "function", "function": {"name": "f"}}])")).ok());
}

}  // namespace
}  // namespace pagellm::server
