// Unit tests of the router's pieces that need no worker: the prefix index, the routing
// policies, request keys, stream resume and the worker registry.
#include <gtest/gtest.h>

#include "router/prefix_index.h"
#include "router/request_key.h"
#include "router/routing_policy.h"
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
  OrderedJson lp = OrderedJson::parse(R"({"prompt":"a","stream":true,"logprobs":2})");
  EXPECT_FALSE(ReadRequestKey(lp, false).resumable);
  OrderedJson none = OrderedJson::parse(R"({"stream":true})");
  EXPECT_FALSE(ReadRequestKey(none, false).resumable);
}

TEST(StreamResumeTest, ResumesFromTokenIdsAndRewritesChunks) {
  OrderedJson body = OrderedJson::parse(R"({"model":"m","prompt":"hi","max_tokens":5,"stream":true,
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
  OrderedJson next = r.ResumeBody();
  EXPECT_EQ(next["prompt"], OrderedJson::parse("[1,2,10,11]"));
  EXPECT_EQ(next["max_tokens"], 3);
  r.BeginResume();
  auto resumed = r.OnEvent(OrderedJson::parse(R"({"id":"c2","created":9,"choices":[{"index":0,"text":"C",
      "prompt_token_ids":[1,2,10,11],"token_ids":[12],"finish_reason":"length"}]})"));
  EXPECT_EQ((*resumed)["id"], "c1");
  EXPECT_EQ((*resumed)["created"], 7);
  EXPECT_TRUE(r.finished());
  auto usage = r.OnEvent(OrderedJson::parse(R"({"id":"c2","choices":[],
      "usage":{"prompt_tokens":4,"completion_tokens":1,"total_tokens":5}})"));
  EXPECT_EQ((*usage)["usage"]["prompt_tokens"], 2);
  EXPECT_EQ((*usage)["usage"]["completion_tokens"], 3);
}

TEST(StreamResumeTest, ChatResumeIsChatShaped) {
  OrderedJson body = OrderedJson::parse(R"({"model":"m","messages":[{"role":"user","content":"x"}],
      "max_tokens":4,"stream":true})");
  StreamResume r(body, true, ReadRequestKey(body, true));
  r.OnEvent(OrderedJson::parse(R"({"id":"k","created":1,"object":"chat.completion.chunk","prompt_token_ids":[5],
      "choices":[{"index":0,"delta":{"role":"assistant","content":""},"token_ids":[]}]})"));
  r.OnEvent(OrderedJson::parse(R"({"id":"k","choices":[{"index":0,"delta":{"content":"a"},"token_ids":[6]}]})"));
  ASSERT_TRUE(r.CanResume());
  OrderedJson next = r.ResumeBody();
  EXPECT_FALSE(next.contains("messages"));
  EXPECT_EQ(next["prompt"], OrderedJson::parse("[5,6]"));
  r.BeginResume();
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
