// Unit tests of the router's pieces that need no worker: the prefix index, the routing
// policies, request keys, stream resume and the worker registry.
#include <gtest/gtest.h>

#include "router/prefix_index.h"
#include "router/request_key.h"
#include "router/routing_policy.h"
#include "router/completion_logprobs.h"
#include "router/stream_resume.h"
#include "router/worker_registry.h"

namespace pagellm::router {
namespace {

TEST(PrefixIndexTest, MatchesSharedLeadingBlocksOnly) {
  PrefixIndex index;
  std::string system(3 * PrefixIndex::kBlockChars, 's');
  auto a = PrefixIndex::HashBlocks(system + std::string(PrefixIndex::kBlockChars, 'a'));
  auto b = PrefixIndex::HashBlocks(system + std::string(PrefixIndex::kBlockChars, 'b'));
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(index.MatchBlocks("w1", a), 0u);
  index.Insert("w1", a);
  EXPECT_EQ(index.MatchBlocks("w1", a), 4u);
  EXPECT_EQ(index.MatchBlocks("w1", b), 3u);
  EXPECT_EQ(index.MatchBlocks("w2", b), 0u);
  // A block equal to one of the prefix's, at another position, does not match.
  auto shifted = PrefixIndex::HashBlocks(std::string(PrefixIndex::kBlockChars, 'x') + system);
  EXPECT_EQ(index.MatchBlocks("w1", shifted), 0u);
  index.RemoveWorker("w1");
  EXPECT_EQ(index.MatchBlocks("w1", a), 0u);
}

TEST(PrefixIndexTest, EvictsLeastRecentlyUsedBlocks) {
  PrefixIndex index(/*max_blocks_per_worker=*/4);
  auto a = PrefixIndex::HashBlocks(std::string(3 * PrefixIndex::kBlockChars, 'a'));
  auto b = PrefixIndex::HashBlocks(std::string(3 * PrefixIndex::kBlockChars, 'b'));
  index.Insert("w", a);
  index.Insert("w", b);
  EXPECT_EQ(index.NumBlocks("w"), 4u);
  EXPECT_EQ(index.MatchBlocks("w", b), 3u);
  EXPECT_EQ(index.MatchBlocks("w", a), 1u);  // a's first block survived (inserted last of a)
}

std::vector<Candidate> Loads(std::vector<int64_t> inflight) {
  std::vector<Candidate> c(inflight.size());
  for (size_t i = 0; i < c.size(); ++i) {
    c[i].num_inflight_requests = inflight[i];
    c[i].kv_usage = 0.1;
  }
  return c;
}

TEST(RoutingPolicyTest, RoundRobinCycles) {
  RoutingPolicy p(PolicyKind::kRoundRobin, {});
  auto c = Loads({0, 0, 0});
  std::vector<size_t> got;
  for (int i = 0; i < 6; ++i) got.push_back(p.Pick(c, 0).idx);
  EXPECT_EQ(got, (std::vector<size_t>{0, 1, 2, 0, 1, 2}));
}

TEST(RoutingPolicyTest, LeastKvPicksLowestUsageThenFewestInflight) {
  RoutingPolicy p(PolicyKind::kLeastKv, {});
  auto c = Loads({0, 5, 2});
  c[0].kv_usage = 0.9;
  c[1].kv_usage = 0.2;
  c[2].kv_usage = 0.2;
  for (int i = 0; i < 4; ++i) EXPECT_EQ(p.Pick(c, 0).idx, 2u);
  c[0].kv_usage = 1.0;  // stale metrics arrive as saturated
  c[2].kv_usage = 0.5;
  EXPECT_EQ(p.Pick(c, 0).idx, 1u);
}

TEST(RoutingPolicyTest, CacheAwareFollowsPrefixUnlessImbalanced) {
  RoutingPolicy p(PolicyKind::kCacheAware, {.cache_threshold = 0.3, .balance_abs = 4, .balance_rel = 1.5});
  auto c = Loads({3, 1, 2});
  c[0].matched_blocks = 8;
  RouteChoice r = p.Pick(c, 10);
  EXPECT_EQ(r.idx, 0u);
  EXPECT_STREQ(r.reason, "prefix");
  c[0].matched_blocks = 2;  // below the threshold: least loaded
  EXPECT_EQ(p.Pick(c, 10).idx, 1u);
  c[0].matched_blocks = 8;
  c[0].num_inflight_requests = 20;  // imbalanced: shortest queue even with the match
  r = p.Pick(c, 10);
  EXPECT_EQ(r.idx, 1u);
  EXPECT_STREQ(r.reason, "load");
}

TEST(RoutingPolicyTest, DefaultWeighsPrefixQueueAndKv) {
  RoutingPolicy p(PolicyKind::kDefault, {});
  auto c = Loads({4, 0, 0});
  c[0].matched_blocks = 10;  // 3 * 1.0 + queue 0 + kv 0.9 = 3.9 beats 0 + 1 + 0.9
  EXPECT_EQ(p.Pick(c, 10).idx, 0u);
  c[0].matched_blocks = 2;   // 3 * 0.2 + 0 + 0.9 = 1.5 loses to 1.9
  EXPECT_NE(p.Pick(c, 10).idx, 0u);
  c[1].kv_usage = 1.0;       // saturated (or stale): worker 2 wins
  EXPECT_EQ(p.Pick(c, 10).idx, 2u);
}

TEST(RequestKeyTest, ChatKeysOnEveryMessageAndCompletionOnPrompt) {
  OrderedJson chat = OrderedJson::parse(R"({"messages":[{"role":"system","content":"S"},
      {"role":"user","content":[{"type":"text","text":"hi"}]}],"max_tokens":7,"stream":true})");
  RequestKey k = ReadRequestKey(chat, true);
  EXPECT_EQ(k.text, "system\x1fS\x1euser\x1fhi\x1e");
  EXPECT_EQ(k.max_tokens, 7);
  EXPECT_TRUE(k.stream);
  EXPECT_TRUE(k.resumable);
  OrderedJson two = OrderedJson::parse(R"({"prompt":["a","b"],"stream":true})");
  EXPECT_FALSE(ReadRequestKey(two, false).resumable);
  OrderedJson lp = OrderedJson::parse(R"({"prompt":"a","stream":true,"logprobs":2,"n":3})");
  EXPECT_TRUE(ReadRequestKey(lp, false).resumable);
  EXPECT_EQ(ReadRequestKey(lp, false).n, 3);
  OrderedJson echo = OrderedJson::parse(R"({"prompt":"a","stream":true,"echo":true})");
  EXPECT_FALSE(ReadRequestKey(echo, false).resumable);
  OrderedJson none = OrderedJson::parse(R"({"stream":true})");
  EXPECT_FALSE(ReadRequestKey(none, false).resumable);
  // A resumed stream would restart (or lose) the grammar mid-output.
  for (const char* constrained : {R"({"prompt":"a","stream":true,"guided_regex":"a+"})",
                                  R"({"prompt":"a","stream":true,"structured_outputs":{"choice":["x"]}})",
                                  R"({"messages":[],"max_tokens":5,"stream":true,"response_format":{"type":"json_object"}})",
                                  R"({"messages":[],"max_tokens":5,"stream":true,"tool_choice":"required"})"}) {
    OrderedJson body = OrderedJson::parse(constrained);
    EXPECT_FALSE(ReadRequestKey(body, body.contains("messages")).resumable) << constrained;
  }
  OrderedJson text = OrderedJson::parse(R"({"messages":[],"max_tokens":5,"stream":true,"response_format":{"type":"text"}})");
  EXPECT_TRUE(ReadRequestKey(text, true).resumable);
}

TEST(StreamResumeTest, ResumesFromTokenIdsAndRewritesChunks) {
  OrderedJson body = OrderedJson::parse(R"({"model":"m","prompt":"hi","max_tokens":5,"min_tokens":3,"stream":true,
      "stream_options":{"include_usage":true}})");
  RequestKey key = ReadRequestKey(body, false);
  StreamResume r(body, false, key);
  EXPECT_TRUE(r.UpstreamBody()["return_token_ids"].get<bool>());
  auto first = r.OnEvent(OrderedJson::parse(R"({"id":"c1","created":7,"choices":[{"index":0,"text":"A",
      "prompt_token_ids":[1,2],"token_ids":[10],"finish_reason":null}]})"));
  ASSERT_TRUE(first.has_value());
  EXPECT_FALSE((*first)["choices"][0].contains("token_ids"));
  EXPECT_FALSE((*first)["choices"][0].contains("prompt_token_ids"));
  r.OnEvent(OrderedJson::parse(R"({"id":"c1","created":7,"choices":[{"index":0,"text":"B","token_ids":[11]}]})"));
  ASSERT_TRUE(r.CanResume());
  std::vector<OrderedJson> closed;
  ASSERT_TRUE(r.BeginResume(&closed));
  EXPECT_TRUE(closed.empty());
  OrderedJson next = r.ResumeBody();
  EXPECT_EQ(next["prompt"], OrderedJson::parse("[1,2,10,11]"));
  EXPECT_EQ(next["max_tokens"], 3);
  EXPECT_EQ(next["min_tokens"], 1);  // the two tokens so far count
  auto resumed = r.OnEvent(OrderedJson::parse(R"({"id":"c2","created":9,"choices":[{"index":0,"text":"C",
      "prompt_token_ids":[1,2,10,11],"token_ids":[12],"finish_reason":"length"}]})"));
  EXPECT_EQ((*resumed)["id"], "c1");
  EXPECT_EQ((*resumed)["created"], 7);
  EXPECT_TRUE(r.AllFinished());
  auto usage = r.OnEvent(OrderedJson::parse(R"({"id":"c2","choices":[],
      "usage":{"prompt_tokens":4,"completion_tokens":1,"total_tokens":5}})"));
  EXPECT_FALSE(usage.has_value());  // the router sends its own count at the end
  std::vector<OrderedJson> final_events = r.FinalEvents();
  ASSERT_EQ(final_events.size(), 1u);
  EXPECT_EQ(final_events[0]["usage"]["prompt_tokens"], 2);
  EXPECT_EQ(final_events[0]["usage"]["completion_tokens"], 3);
  EXPECT_EQ(final_events[0]["id"], "c1");
}

TEST(StreamResumeTest, ResumesEveryUnfinishedChoiceWithItsLogprobs) {
  OrderedJson body = OrderedJson::parse(R"({"model":"m","prompt":"hi","max_tokens":3,"n":3,"logprobs":1,
      "stream":true,"stream_options":{"include_usage":true}})");
  StreamResume r(body, false, ReadRequestKey(body, false));
  auto lp = [](int offset, const char* tok) {
    return OrderedJson{{"text_offset", {offset}}, {"token_logprobs", {-0.5}}, {"tokens", {tok}},
                       {"top_logprobs", {{{tok, -0.5}}}}};
  };
  OrderedJson c0 = {{"index", 0}, {"text", "ab"}, {"token_ids", {10}}, {"logprobs", lp(0, "ab")},
                    {"prompt_token_ids", {1}}};
  OrderedJson c1 = {{"index", 1}, {"text", "x"}, {"token_ids", {20}}, {"logprobs", lp(0, "x")}};
  OrderedJson c2 = {{"index", 2}, {"text", "y"}, {"token_ids", {30, 31, 32}}, {"logprobs", lp(0, "y")}};
  r.OnEvent({{"id", "c"}, {"choices", {c0, c1, c2}}});
  std::vector<OrderedJson> closed;
  ASSERT_TRUE(r.BeginResume(&closed));
  EXPECT_EQ(r.ResumeBody()["prompt"], OrderedJson::parse("[1,10]"));
  EXPECT_EQ(r.ResumeBody()["n"], 1);
  EXPECT_EQ(r.ResumeBody()["logprobs"], 1);
  auto out = r.OnEvent(OrderedJson::parse(R"({"id":"z","choices":[{"index":0,"text":"c","token_ids":[11],
      "logprobs":{"text_offset":[0],"token_logprobs":[-1],"tokens":["c"],"top_logprobs":[{"c":-1}]}}]})"));
  EXPECT_EQ((*out)["choices"][0]["logprobs"]["text_offset"][0], 2);  // after "ab"
  out = r.OnEvent(OrderedJson::parse(R"({"id":"z","choices":[{"index":0,"text":"d","token_ids":[12],
      "finish_reason":"length","logprobs":{"text_offset":[1],"token_logprobs":[-1],"tokens":["d"],
      "top_logprobs":[{"d":-1}]}}]})"));
  EXPECT_EQ((*out)["choices"][0]["logprobs"]["text_offset"][0], 3);
  EXPECT_FALSE(r.AllFinished());
  ASSERT_TRUE(r.BeginResume(&closed));
  EXPECT_EQ(r.ResumeBody()["prompt"], OrderedJson::parse("[1,20]"));
  EXPECT_EQ(r.ResumeBody()["max_tokens"], 2);
  out = r.OnEvent(OrderedJson::parse(R"({"id":"z","choices":[{"index":0,"text":"q","token_ids":[21,22],
      "finish_reason":"length"}]})"));
  EXPECT_EQ((*out)["choices"][0]["index"], 1);
  // Choice 2 spent its budget before the cut: closed by the router, not resumed.
  EXPECT_FALSE(r.BeginResume(&closed));
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_EQ(closed[0]["choices"][0]["index"], 2);
  EXPECT_EQ(closed[0]["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(r.AllFinished());
  EXPECT_EQ(r.FinalEvents()[0]["usage"]["completion_tokens"], 9);
}

// A token ending in an incomplete UTF-8 character shows no text until the next one; a
// resume produces it again (its text would be lost otherwise), without repeating its
// logprobs to the client.
TEST(StreamResumeTest, HeldBackTokensAreProducedAgain) {
  OrderedJson body = OrderedJson::parse(R"({"model":"m","prompt":"hi","max_tokens":5,"logprobs":0,"stream":true,
      "stream_options":{"include_usage":true}})");
  StreamResume r(body, false, ReadRequestKey(body, false));
  r.OnEvent(OrderedJson::parse(R"({"id":"c","choices":[{"index":0,"text":"a","prompt_token_ids":[1],"token_ids":[10],
      "logprobs":{"text_offset":[0],"token_logprobs":[-1],"tokens":["a"],"top_logprobs":[{"a":-1}]}}]})"));
  r.OnEvent(OrderedJson::parse(R"({"id":"c","choices":[{"index":0,"text":"","token_ids":[11],
      "logprobs":{"text_offset":[1],"token_logprobs":[-2],"tokens":["\ufffd"],"top_logprobs":[{"\ufffd":-2}]}}]})"));
  std::vector<OrderedJson> closed;
  ASSERT_TRUE(r.BeginResume(&closed));
  EXPECT_EQ(r.ResumeBody()["prompt"], OrderedJson::parse("[1,10]"));
  EXPECT_EQ(r.ResumeBody()["max_tokens"], 4);
  auto again = r.OnEvent(OrderedJson::parse(R"({"id":"z","choices":[{"index":0,"text":"","token_ids":[11],
      "logprobs":{"text_offset":[0],"token_logprobs":[-2],"tokens":["\ufffd"],"top_logprobs":[{"\ufffd":-2}]}}]})"));
  EXPECT_TRUE((*again)["choices"][0]["logprobs"]["tokens"].empty());
  auto next = r.OnEvent(OrderedJson::parse(R"({"id":"z","choices":[{"index":0,"text":"\u00e9b","token_ids":[12],
      "finish_reason":"length","logprobs":{"text_offset":[0],"token_logprobs":[-3],"tokens":["b"],
      "top_logprobs":[{"b":-3}]}}]})"));
  EXPECT_EQ((*next)["choices"][0]["text"], "\u00e9b");
  EXPECT_EQ((*next)["choices"][0]["logprobs"]["text_offset"][0], 1);
  EXPECT_TRUE(r.AllFinished());
  EXPECT_EQ(r.FinalEvents()[0]["usage"]["completion_tokens"], 3);
}

TEST(StreamResumeTest, ChatLogprobsComeBackChatShaped) {
  OrderedJson completion = OrderedJson::parse(R"({"text_offset":[0,1],"token_logprobs":[-0.1,-2.0],
      "tokens":["a","b"],"top_logprobs":[{"a":-0.1,"z":-3.0},{"y":-1.0,"x":-1.5,"b":-2.0}]})");
  OrderedJson chat = ChatLogprobsFromCompletion(completion, 2);
  ASSERT_EQ(chat["content"].size(), 2u);
  EXPECT_EQ(chat["content"][0]["token"], "a");
  EXPECT_EQ(chat["content"][0]["bytes"], OrderedJson::parse("[97]"));
  EXPECT_EQ(chat["content"][0]["top_logprobs"].size(), 2u);
  // The sampled token outside the top 2 is not one of the alternatives.
  EXPECT_EQ(chat["content"][1]["top_logprobs"].size(), 2u);
  EXPECT_EQ(chat["content"][1]["top_logprobs"][1]["token"], "x");
  EXPECT_EQ(chat["content"][1]["logprob"], -2.0);
}

// A character split over two tokens: the first shows no text, the second the whole
// character. The worker's offsets count code points of the text (0, then 1), not the
// U+FFFD placeholders the token strings arrive as; a resume after them continues at 1.
TEST(StreamResumeTest, OffsetsAfterASplitCharacterFollowTheText) {
  EXPECT_EQ(TextOffsetAdvance("\xe4\xb8\xad" "b"), 2);
  OrderedJson body = OrderedJson::parse(R"({"model":"m","prompt":"hi","max_tokens":4,"logprobs":0,"stream":true})");
  StreamResume r(body, false, ReadRequestKey(body, false));
  r.OnEvent(OrderedJson::parse(R"({"id":"c","choices":[{"index":0,"text":"","prompt_token_ids":[1],"token_ids":[10],
      "logprobs":{"text_offset":[0],"token_logprobs":[-1],"tokens":["\ufffd\ufffd"],"top_logprobs":[{"\ufffd\ufffd":-1}]}}]})"));
  r.OnEvent(OrderedJson::parse(R"({"id":"c","choices":[{"index":0,"text":"\u4e2d","token_ids":[11],
      "logprobs":{"text_offset":[1],"token_logprobs":[-2],"tokens":["\ufffd"],"top_logprobs":[{"\ufffd":-2}]}}]})"));
  std::vector<OrderedJson> closed;
  ASSERT_TRUE(r.BeginResume(&closed));
  auto next = r.OnEvent(OrderedJson::parse(R"({"id":"z","choices":[{"index":0,"text":"b","token_ids":[12],
      "logprobs":{"text_offset":[0],"token_logprobs":[-3],"tokens":["b"],"top_logprobs":[{"b":-3}]}}]})"));
  EXPECT_EQ((*next)["choices"][0]["logprobs"]["text_offset"][0], 1);
}

TEST(StreamResumeTest, ChatResumeIsChatShaped) {
  OrderedJson body = OrderedJson::parse(R"({"model":"m","messages":[{"role":"user","content":"x"}],
      "max_tokens":4,"stream":true})");
  StreamResume r(body, true, ReadRequestKey(body, true));
  r.OnEvent(OrderedJson::parse(R"({"id":"k","created":1,"object":"chat.completion.chunk","prompt_token_ids":[5],
      "choices":[{"index":0,"delta":{"role":"assistant","content":""},"token_ids":[]}]})"));
  r.OnEvent(OrderedJson::parse(R"({"id":"k","choices":[{"index":0,"delta":{"content":"a"},"token_ids":[6]}]})"));
  ASSERT_TRUE(r.CanResume());
  std::vector<OrderedJson> closed;
  ASSERT_TRUE(r.BeginResume(&closed));
  OrderedJson next = r.ResumeBody();
  EXPECT_FALSE(next.contains("messages"));
  EXPECT_EQ(next["prompt"], OrderedJson::parse("[5,6]"));
  auto out = r.OnEvent(OrderedJson::parse(R"({"id":"z","object":"text_completion","choices":[{"index":0,"text":"b",
      "token_ids":[7],"finish_reason":null}]})"));
  EXPECT_EQ((*out)["object"], "chat.completion.chunk");
  EXPECT_EQ((*out)["choices"][0]["delta"]["content"], "b");
  EXPECT_EQ((*out)["id"], "k");
}

TEST(WorkerRegistryTest, HealthDrainAndStaleMetrics) {
  WorkerRegistry reg(/*metrics_stale_s=*/1.0);
  ASSERT_TRUE(reg.Add("http://127.0.0.1:9/").ok());
  EXPECT_FALSE(reg.Add("http://127.0.0.1:9").ok());  // same worker
  EXPECT_FALSE(reg.Add("http://127.0.0.1:9/v1").ok());
  auto v = reg.Snapshot(0.0);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].url, "http://127.0.0.1:9");
  EXPECT_FALSE(v[0].routable());  // probing until a generation succeeds
  reg.SetHealth(v[0].url, WorkerHealth::kReady);
  reg.OnMetrics(v[0].url, 0.25, 3, 10.0);
  EXPECT_DOUBLE_EQ(reg.Snapshot(10.5)[0].kv_usage, 0.25);
  EXPECT_DOUBLE_EQ(reg.Snapshot(12.0)[0].kv_usage, 1.0);  // stale = saturated
  reg.OnRequestStart(v[0].url, 100);
  EXPECT_EQ(reg.Snapshot(0)[0].num_inflight_requests, 1);
  reg.OnRequestEnd(v[0].url, 100);
  ASSERT_TRUE(reg.Drain(v[0].url).ok());
  reg.SetHealth(v[0].url, WorkerHealth::kReady);  // a probe does not undo a drain
  EXPECT_EQ(reg.Snapshot(0)[0].health, WorkerHealth::kDraining);
  ASSERT_TRUE(reg.Remove(v[0].url).ok());
  EXPECT_TRUE(reg.Snapshot(0).empty());
}

}  // namespace
}  // namespace pagellm::router
