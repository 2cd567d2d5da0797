#include "bench/openai_stream.h"

#include <string>

#include <gtest/gtest.h>

namespace pagellm::bench {
namespace {

std::string CompletionChunk(const std::string& text) {
  return Json{{"object", "text_completion"}, {"choices", {{{"index", 0}, {"text", text}, {"finish_reason", nullptr}}}}}
      .dump();
}

std::string ChatChunk(const Json& delta) {
  return Json{{"object", "chat.completion.chunk"}, {"choices", {{{"index", 0}, {"delta", delta}}}}}.dump();
}

TEST(OpenAiStreamTest, CompletionsBody) {
  RequestSpec spec{.model = "qwen", .prompt = "hello", .prompt_len = 1, .max_tokens = 16, .ignore_eos = true};
  spec.extra_body = Json{{"temperature", 0.7}, {"top_k", 5}};
  Json body = Json::parse(BuildRequestBody(ApiKind::kCompletions, spec));
  EXPECT_EQ(body["model"], "qwen");
  EXPECT_EQ(body["prompt"], "hello");
  EXPECT_EQ(body["max_tokens"], 16);
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  EXPECT_EQ(body["ignore_eos"], true);
  EXPECT_EQ(body["temperature"], 0.7);  // extra body wins over the greedy default
  EXPECT_EQ(body["top_k"], 5);
  EXPECT_FALSE(body.contains("messages"));
}

TEST(OpenAiStreamTest, ChatBody) {
  RequestSpec spec{.model = "qwen", .prompt = "hi", .prompt_len = 1, .max_tokens = 8};
  Json body = Json::parse(BuildRequestBody(ApiKind::kChatCompletions, spec));
  EXPECT_EQ(body["messages"][0]["role"], "user");
  EXPECT_EQ(body["messages"][0]["content"], "hi");
  EXPECT_EQ(body["max_completion_tokens"], 8);
  EXPECT_EQ(body["temperature"], 0.0);
  EXPECT_FALSE(body.contains("ignore_eos"));
  EXPECT_FALSE(body.contains("prompt"));
}

TEST(OpenAiStreamTest, CompletionsTimingAndUsage) {
  StreamAccumulator acc(ApiKind::kCompletions);
  acc.OnEvent(CompletionChunk("Hello"), 0.5);
  acc.OnEvent(CompletionChunk(""), 0.55);  // empty text (held-back bytes): not a token chunk
  acc.OnEvent(CompletionChunk(" world"), 0.6);
  acc.OnEvent(CompletionChunk("!"), 0.75);
  acc.OnEvent(R"({"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}})", 0.8);
  acc.OnEvent("[DONE]", 0.9);
  RequestOutput out;
  acc.Finish("", &out);
  EXPECT_TRUE(out.success) << out.error;
  EXPECT_DOUBLE_EQ(out.ttft_s, 0.5);
  ASSERT_EQ(out.itl_s.size(), 2u);
  EXPECT_NEAR(out.itl_s[0], 0.1, 1e-12);
  EXPECT_NEAR(out.itl_s[1], 0.15, 1e-12);
  EXPECT_DOUBLE_EQ(out.latency_s, 0.8);  // last data event before [DONE]
  EXPECT_EQ(out.output_tokens, 4);
  EXPECT_EQ(out.generated_text, "Hello world!");
}

TEST(OpenAiStreamTest, ChatRoleChunkIsNotTheFirstToken) {
  StreamAccumulator acc(ApiKind::kChatCompletions);
  acc.OnEvent(ChatChunk({{"role", "assistant"}, {"content", ""}}), 0.01);
  acc.OnEvent(ChatChunk({{"reasoning_content", "think"}}), 0.3);
  acc.OnEvent(ChatChunk({{"content", "A"}}), 0.4);
  acc.OnEvent(ChatChunk({{"tool_calls", {{{"index", 0}}}}}), 0.45);
  acc.OnEvent(ChatChunk(Json::object()), 0.5);  // finish chunk
  RequestOutput out;
  acc.Finish("", &out);
  EXPECT_TRUE(out.success);
  EXPECT_DOUBLE_EQ(out.ttft_s, 0.3);
  EXPECT_EQ(out.itl_s.size(), 2u);
  EXPECT_EQ(out.generated_text, "A");
  EXPECT_EQ(out.output_tokens, 0);  // no usage: the caller falls back to the tokenizer
  EXPECT_DOUBLE_EQ(out.latency_s, 0.5);
}

TEST(OpenAiStreamTest, FailuresAreReported) {
  {
    StreamAccumulator acc(ApiKind::kCompletions);
    acc.OnEvent(CompletionChunk("a"), 0.1);
    RequestOutput out;
    acc.Finish("the response stream broke: end of stream", &out);
    EXPECT_FALSE(out.success);
    EXPECT_NE(out.error.find("broke"), std::string::npos);
  }
  {
    StreamAccumulator acc(ApiKind::kCompletions);
    acc.OnEvent(CompletionChunk("a"), 0.1);
    acc.OnEvent(R"({"error":{"message":"engine died","code":500}})", 0.2);
    RequestOutput out;
    acc.Finish("", &out);
    EXPECT_FALSE(out.success);
    EXPECT_NE(out.error.find("engine died"), std::string::npos);
  }
  {
    StreamAccumulator acc(ApiKind::kCompletions);
    acc.OnEvent("{not json", 0.1);
    RequestOutput out;
    acc.Finish("", &out);
    EXPECT_FALSE(out.success);
  }
  {
    StreamAccumulator acc(ApiKind::kCompletions);
    acc.OnEvent("[DONE]", 0.1);
    RequestOutput out;
    acc.Finish("", &out);
    EXPECT_FALSE(out.success);  // no content chunk: no TTFT
  }
}

}  // namespace
}  // namespace pagellm::bench
