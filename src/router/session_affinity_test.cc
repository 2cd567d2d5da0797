// Conversation affinity: the table, and RouterService::Choose keeping a session on one
// worker across a drain and the readmission after it.
#include "router/session_affinity.h"

#include <set>

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include "router/relay.h"
#include "router/router_service.h"

namespace pagellm::router {
namespace {

TEST(SessionAffinityTest, BindsMovesAndForgetsTheLeastRecentlyUsed) {
  SessionAffinity sessions(/*max_sessions=*/2);
  EXPECT_FALSE(sessions.Lookup("a").has_value());
  EXPECT_FALSE(sessions.Bind("a", "http://w1"));
  EXPECT_FALSE(sessions.Bind("a", "http://w1"));  // same worker: not a move
  EXPECT_TRUE(sessions.Bind("a", "http://w2"));
  EXPECT_EQ(sessions.Lookup("a"), "http://w2");
  sessions.Bind("b", "http://w1");
  sessions.Lookup("a");                           // a is now the most recent
  sessions.Bind("c", "http://w3");                // evicts b
  EXPECT_EQ(sessions.num_sessions(), 2u);
  EXPECT_FALSE(sessions.Lookup("b").has_value());
  EXPECT_EQ(sessions.Lookup("a"), "http://w2");
  EXPECT_EQ(sessions.Lookup("c"), "http://w3");
}

class SessionRoutingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* url : kUrls) {
      ASSERT_TRUE(registry_.Add(url).ok());
      registry_.SetHealth(url, WorkerHealth::kReady);
    }
  }
  // The worker Choose() picks for a completion in `session` ("" = none).
  std::string Route(const std::string& session, const std::string& prompt = "hello") {
    RelayJob job(service_, nullptr, "/v1/completions", OrderedJson{{"prompt", prompt}}, false, 0.0);
    job.session = session;
    std::optional<WorkerView> w = service_.Choose(job);
    return w ? w->url : "";
  }

  static constexpr const char* kUrls[] = {"http://127.0.0.1:9001", "http://127.0.0.1:9002", "http://127.0.0.1:9003"};
  WorkerRegistry registry_;
  RouterMetrics metrics_{"round_robin"};
  boost::asio::io_context io_;
  RouterService service_{registry_, metrics_, RouterOptions{.policy = PolicyKind::kRoundRobin}, io_};
};

TEST_F(SessionRoutingTest, ASessionStaysOnItsWorkerAndMovesOnceWhenItIsDrained) {
  const std::string home = Route("chat-1");
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Route("chat-1", "turn " + std::to_string(i)), home);
  // Without a session round_robin spreads the requests.
  std::set<std::string> spread;
  for (int i = 0; i < 3; ++i) spread.insert(Route(""));
  EXPECT_EQ(spread.size(), 3u);

  // Drained (a rollout restarts it): the session moves to one other worker and stays.
  ASSERT_TRUE(registry_.Drain(home).ok());
  const std::string next = Route("chat-1");
  ASSERT_NE(next, "");
  EXPECT_NE(next, home);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Route("chat-1"), next);
  EXPECT_DOUBLE_EQ(metrics_.session_moves(), 1.0);

  // Readmitted after the restart (removed and added again, probed ready): the session
  // does not go back; its history is cached on `next` now.
  ASSERT_TRUE(registry_.Remove(home).ok());
  ASSERT_TRUE(registry_.Add(home).ok());
  registry_.SetHealth(home, WorkerHealth::kReady);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Route("chat-1"), next);
  EXPECT_DOUBLE_EQ(metrics_.session_moves(), 1.0);
  // A new session may land on the readmitted worker.
  std::set<std::string> fresh;
  for (int i = 0; i < 6; ++i) fresh.insert(Route("new-" + std::to_string(i)));
  EXPECT_TRUE(fresh.count(home));
}

TEST_F(SessionRoutingTest, AFailedAttemptMovesTheSessionWithTheRetry) {
  const std::string home = Route("chat-2");
  RelayJob retry(service_, nullptr, "/v1/completions", OrderedJson{{"prompt", "x"}}, false, 0.0);
  retry.session = "chat-2";
  retry.tried.insert(home);  // the first attempt failed there
  std::optional<WorkerView> w = service_.Choose(retry);
  ASSERT_TRUE(w.has_value());
  EXPECT_NE(w->url, home);
  EXPECT_EQ(Route("chat-2"), w->url);
}

TEST_F(SessionRoutingTest, SessionComesFromTheHeaderElseTheUserField) {
  net::HttpRequest req;
  req.headers = {{"x-session-id", "from-header"}};
  EXPECT_EQ(service_.SessionOf(req, OrderedJson{{"user", "u1"}}), "from-header");
  req.headers.clear();
  EXPECT_EQ(service_.SessionOf(req, OrderedJson{{"user", "u1"}}), "u1");
  EXPECT_EQ(service_.SessionOf(req, OrderedJson{{"user", 7}}), "");  // not a string: no session
  EXPECT_EQ(service_.SessionOf(req, OrderedJson::object()), "");
}

}  // namespace
}  // namespace pagellm::router
