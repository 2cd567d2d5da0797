#include "server/openai_request.h"

#include <gtest/gtest.h>

namespace pagellm::server {
namespace {

TEST(OpenAiRequestTest, ChatSamplingFields) {
  OrderedJson body = OrderedJson::parse(R"({
    "model": "m", "messages": [{"role": "user", "content": "hi"}],
    "max_tokens": 5, "max_completion_tokens": 7, "temperature": 0.5, "top_p": 0.9, "top_k": 20, "min_p": 0.1,
    "presence_penalty": 0.2, "frequency_penalty": 0.3, "repetition_penalty": 1.1, "seed": 42, "n": 2,
    "stop": "END", "stop_token_ids": [7, 8], "ignore_eos": true, "logit_bias": {"12": -100},
    "logprobs": true, "top_logprobs": 3, "stream": true,
    "stream_options": {"include_usage": true, "continuous_usage_stats": true},
    "chat_template_kwargs": {"enable_thinking": false}})");
  StatusOr<ChatRequest> r = ParseChatRequest(body);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const SamplingParams& p = r->params;
  EXPECT_EQ(*p.max_tokens, 7);  // max_completion_tokens wins
  EXPECT_FLOAT_EQ(*p.temperature, 0.5f);
  EXPECT_EQ(*p.top_k, 20);
  EXPECT_EQ(*p.seed, 42u);
  EXPECT_EQ(p.n, 2);
  EXPECT_EQ(p.stop, std::vector<std::string>{"END"});
  EXPECT_EQ(p.stop_token_ids, (std::vector<int32_t>{7, 8}));
  EXPECT_TRUE(p.ignore_eos);
  ASSERT_EQ(p.logit_bias.size(), 1u);
  EXPECT_EQ(p.logit_bias[0].first, 12);
  EXPECT_EQ(*p.logprobs, 3);
  EXPECT_TRUE(r->stream.stream && r->stream.include_usage && r->stream.continuous_usage_stats);
  EXPECT_EQ(r->chat_template_kwargs["enable_thinking"], false);
}

TEST(OpenAiRequestTest, ChatLogprobsWithoutTopLogprobsAskForZero) {
  OrderedJson body = OrderedJson::parse(R"({"messages": [{"role": "user", "content": "hi"}], "logprobs": true})");
  StatusOr<ChatRequest> r = ParseChatRequest(body);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->params.logprobs.has_value());
  EXPECT_EQ(*r->params.logprobs, 0);
}

TEST(OpenAiRequestTest, ErrorsNameTheParameter) {
  auto err = [](const char* text) {
    StatusOr<ChatRequest> r = ParseChatRequest(OrderedJson::parse(text));
    return r.ok() ? std::string("ok") : r.status().message();
  };
  EXPECT_EQ(err(R"({})").rfind("messages:", 0), 0u);
  EXPECT_EQ(err(R"({"messages": [{"role":"user","content":"x"}], "temperature": "hot"})").rfind("temperature:", 0), 0u);
  EXPECT_EQ(err(R"({"messages": [{"role":"user","content":"x"}], "max_tokens": 0})").rfind("max_tokens:", 0), 0u);
  EXPECT_EQ(err(R"({"messages": [{"role":"user","content":"x"}], "stop": [1]})").rfind("stop:", 0), 0u);
  EXPECT_EQ(err(R"({"messages": [{"role":"user","content":"x"}], "logit_bias": {"a": 1}})").rfind("logit_bias:", 0), 0u);
  EXPECT_EQ(err(R"({"messages": [{"role":"user","content":"x"}], "stream_options": {"include_usage": true}})")
                .rfind("stream_options:", 0), 0u);
  EXPECT_EQ(err(R"({"messages": [{"role":"user","content":"x"}], "top_logprobs": 2})").rfind("top_logprobs:", 0), 0u);
}

TEST(OpenAiRequestTest, CompletionPromptForms) {
  auto prompts = [](const char* text) {
    StatusOr<CompletionRequest> r = ParseCompletionRequest(OrderedJson::parse(text));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->prompts : std::vector<CompletionPrompt>{};
  };
  auto a = prompts(R"({"prompt": "hello"})");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].text, "hello");
  auto b = prompts(R"({"prompt": ["x", "y"]})");
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[1].text, "y");
  auto c = prompts(R"({"prompt": [1, 2, 3]})");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_TRUE(c[0].is_ids);
  EXPECT_EQ(c[0].ids, (std::vector<int32_t>{1, 2, 3}));
  auto d = prompts(R"({"prompt": [[1], [2, 3]]})");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[1].ids, (std::vector<int32_t>{2, 3}));
  EXPECT_FALSE(ParseCompletionRequest(OrderedJson::parse(R"({"prompt": []})")).ok());
  EXPECT_FALSE(ParseCompletionRequest(OrderedJson::parse(R"({"prompt": [1, "x"]})")).ok());
  StatusOr<CompletionRequest> lp = ParseCompletionRequest(OrderedJson::parse(R"({"prompt": "x", "logprobs": 2, "echo": true})"));
  ASSERT_TRUE(lp.ok());
  EXPECT_EQ(*lp->params.logprobs, 2);
  EXPECT_TRUE(lp->echo);
}

}  // namespace
}  // namespace pagellm::server
