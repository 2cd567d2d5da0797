#include "agent/agent_rules.h"

#include <gtest/gtest.h>

namespace pagellm::agent {
namespace {

WorkerSample At(double t, double kv, bool healthy = true) {
  return {.url = "http://w", .now_s = t, .scraped = healthy, .kv_usage = kv, .probe_ok = healthy};
}

TEST(AgentRulesTest, ParsesAndRefusesUnknownKeys) {
  auto r = ParseAgentRules(R"({"kv_pressure": {"above": 0.9, "for_s": 5, "release_below": 0.5},
                               "unready": {"failures": 2, "restart_command": "echo {port}"}})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_DOUBLE_EQ(r->kv_pressure.above, 0.9);
  EXPECT_EQ(r->unready.failures, 2);
  EXPECT_EQ(r->unready.restart_command, "echo {port}");
  EXPECT_NE(ParseAgentRules(R"({"kv_presure": {}})").status().message().find("kv_presure"), std::string::npos);
  EXPECT_FALSE(ParseAgentRules(R"({"unready": {"failures": 0}})").ok());
  EXPECT_FALSE(ParseAgentRules(R"({"kv_pressure": {"above": 0.5, "release_below": 0.9}})").ok());
  EXPECT_FALSE(ParseAgentRules("[1]").ok());
  EXPECT_FALSE(ParseAgentRules(R"({"kv_pressure": {"preempt_to": 1.5}})").ok());
  EXPECT_DOUBLE_EQ(ParseAgentRules(R"({"kv_pressure": {"preempt_to": 0.5}})")->kv_pressure.preempt_to, 0.5);
}

TEST(AgentRulesTest, KvPressureFiresAfterItsDurationAndReleasesBelowTheMark) {
  RuleEvaluator eval(*ParseAgentRules(R"({"kv_pressure": {"above": 0.98, "for_s": 30, "release_below": 0.9}})"));
  EXPECT_TRUE(eval.Observe(At(0, 0.99)).empty());
  EXPECT_TRUE(eval.Observe(At(29, 0.995)).empty());
  auto fire = eval.Observe(At(30, 0.99));
  ASSERT_EQ(fire.size(), 1u);
  EXPECT_EQ(fire[0].kind, DecisionKind::kDrainAndReclaim);
  EXPECT_DOUBLE_EQ(fire[0].measurement["for_s"].get<double>(), 30.0);
  EXPECT_DOUBLE_EQ(fire[0].measurement["preempt_to"].get<double>(), 0.9);  // the default
  EXPECT_TRUE(eval.Observe(At(40, 0.99)).empty());   // once, not every round
  EXPECT_TRUE(eval.Observe(At(41, 0.95)).empty());   // below the trigger, above the release mark
  auto back = eval.Observe(At(42, 0.5));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].kind, DecisionKind::kReadmit);
  // A dip below the trigger restarts the clock.
  EXPECT_TRUE(eval.Observe(At(50, 0.99)).empty());
  EXPECT_TRUE(eval.Observe(At(70, 0.5)).empty());
  EXPECT_TRUE(eval.Observe(At(71, 0.99)).empty());
  EXPECT_TRUE(eval.Observe(At(100, 0.99)).empty());
  EXPECT_EQ(eval.Observe(At(101, 0.99)).size(), 1u);
}

TEST(AgentRulesTest, UnreadyRestartsAfterConsecutiveFailuresOnce) {
  RuleEvaluator eval(*ParseAgentRules(R"({"unready": {"failures": 3, "restart_command": "true"}})"));
  EXPECT_TRUE(eval.Observe(At(0, 0, false)).empty());
  EXPECT_TRUE(eval.Observe(At(1, 0, false)).empty());
  EXPECT_TRUE(eval.Observe(At(2, 0, true)).empty());  // a success resets the count
  EXPECT_TRUE(eval.Observe(At(3, 0, false)).empty());
  EXPECT_TRUE(eval.Observe(At(4, 0, false)).empty());
  auto d = eval.Observe(At(5, 0, false));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].kind, DecisionKind::kRestart);
  EXPECT_TRUE(eval.Observe(At(6, 0, false)).empty());  // the restart owns it now
  eval.OnRestartDone("http://w", /*came_back=*/true, 6.5);
  EXPECT_TRUE(eval.Observe(At(7, 0, true)).empty());
  // A worker whose probe times out behind its queue but whose token counters rise is
  // busy, not dead: no restart.
  RuleEvaluator busy(*ParseAgentRules(R"({"unready": {"failures": 2, "restart_command": "true"}})"));
  for (int i = 0; i < 10; ++i) {
    WorkerSample s = At(i, 0.99, true);
    s.probe_ok = false;
    s.tokens_total = 100.0 * i;
    EXPECT_TRUE(busy.Observe(s).empty()) << i;
  }
  WorkerSample stalled = At(10, 0.99, true);
  stalled.probe_ok = false;
  stalled.tokens_total = 900;  // no progress since the last round
  EXPECT_TRUE(busy.Observe(stalled).empty());
  stalled.now_s = 11;
  EXPECT_EQ(busy.Observe(stalled)[0].kind, DecisionKind::kRestart);
  RuleEvaluator alert_only(*ParseAgentRules(R"({"unready": {"failures": 1}})"));
  EXPECT_EQ(alert_only.Observe(At(0, 0, false))[0].kind, DecisionKind::kAlert);
}

// Degraded mode: a restart that did not bring the worker back, or max_restarts within
// the window, makes the next restart use the fallback command.
TEST(AgentRulesTest, FailingRestartsFallBackToTheSaferCommand) {
  RuleEvaluator eval(*ParseAgentRules(R"({"unready": {"failures": 1, "restart_command": "fast",
      "fallback_command": "safe", "max_restarts": 2, "restart_window_s": 100}})"));
  EXPECT_EQ(eval.Observe(At(0, 0, false))[0].kind, DecisionKind::kRestart);
  eval.OnRestartDone("http://w", /*came_back=*/false, 1);
  EXPECT_EQ(eval.Observe(At(2, 0, false))[0].kind, DecisionKind::kRestartDegraded);
  eval.OnRestartDone("http://w", true, 3);
  // Back, but two restarts within 100 s: the fast path is not trusted yet.
  auto d = eval.Observe(At(50, 0, false));
  EXPECT_EQ(d[0].kind, DecisionKind::kRestartDegraded);
  EXPECT_EQ(d[0].measurement["restarts_in_window"], 2);
  eval.OnRestartDone("http://w", true, 51);
  EXPECT_EQ(eval.Observe(At(300, 0, false))[0].kind, DecisionKind::kRestart);  // the window has passed
}

}  // namespace
}  // namespace pagellm::agent
