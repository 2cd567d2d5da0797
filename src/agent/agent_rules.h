// The agent's rules (the deployment's runbook, as a JSON file) and their evaluation: a
// pure function of what the agent measured, so tests can drive it with made-up times.
//
//   {"kv_pressure": {"above": 0.98, "for_s": 30, "release_below": 0.90, "preempt_to": 0.90},
//    "unready": {"failures": 3, "restart_command": "systemctl restart pagellm@{port}",
//                "restart_timeout_s": 120, "fallback_command": "systemctl start pagellm-safe@{port}",
//                "max_restarts": 2, "restart_window_s": 600}}
//
//   StatusOr<AgentRules> rules = ParseAgentRules(json_text);
//   RuleEvaluator eval(*rules);
//   for (const Decision& d : eval.Observe(sample)) Execute(d);
//
// kv_pressure: KV block usage above `above` for `for_s` seconds: stop admitting (drain
// in the router: new work goes elsewhere), then reclaim what running requests hold:
// POST /preempt_requests preempts the newest ones by recompute until usage is at most
// `preempt_to` (they resume on the worker when there is room, output unchanged; 1 turns
// preemption off), and the prefix cache is reset only when idle cached blocks dominate
// the blocks requests hold (vllm:kv_cache_usage_perc already counts idle cached blocks
// as free, so a reset alone frees nothing under real pressure). Once usage is below
// `release_below`, the worker is admitted again.
// unready: `failures` consecutive rounds in which the worker was neither ready (a real
// 1-token generation succeeded) nor making progress (its prompt + generation token
// counters rose: a busy worker's probe may wait behind its queue, and restarting it
// would throw away accepted work), or did not answer /metrics at all: drain, run the
// restart command if one is given (else alert only), wait
// for a probe to succeed, admit again. Degraded mode: when a restart did not bring the
// worker back, or it needed `max_restarts` restarts within `restart_window_s`, its fast
// path is taken to be failing: the next restart runs `fallback_command` (a safer
// configuration: a smaller --max-num-batched-tokens, PAGELLM_ISA=avx2, ...) and alerts.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/status.h"

namespace pagellm::agent {

struct KvPressureRule {
  bool enabled = true;
  double above = 0.98;
  double for_s = 30.0;
  double release_below = 0.90;
  double preempt_to = 0.90;  // target KV usage of the preemption, in [0, 1]
};

struct UnreadyRule {
  bool enabled = true;
  int failures = 3;
  std::string restart_command;  // "" = alert only; {url} {host} {port} are substituted
  double restart_timeout_s = 120.0;
  std::string fallback_command;  // the degraded-mode restart ("" = none)
  int max_restarts = 2;
  double restart_window_s = 600.0;
};

struct AgentRules {
  KvPressureRule kv_pressure;
  UnreadyRule unready;
};

StatusOr<AgentRules> ParseAgentRules(const std::string& json_text);

// What the agent saw of one worker in one round.
struct WorkerSample {
  std::string url;
  double now_s = 0.0;
  bool scraped = false;     // /metrics answered
  double kv_usage = 0.0;    // vllm:kv_cache_usage_perc
  bool probe_ok = false;    // a 1-token generation succeeded
  double tokens_total = 0;  // vllm:prompt_tokens_total + vllm:generation_tokens_total
};

enum class DecisionKind { kDrainAndReclaim, kReadmit, kRestart, kRestartDegraded, kAlert };
const char* DecisionName(DecisionKind kind);

struct Decision {
  DecisionKind kind;
  std::string rule;
  std::string worker;
  OrderedJson measurement;  // what triggered it
};

class RuleEvaluator {
 public:
  explicit RuleEvaluator(AgentRules rules) : rules_(std::move(rules)) {}
  std::vector<Decision> Observe(const WorkerSample& s);
  // The agent finished a restart of `url` at now_s: its probe succeeded again, or not.
  void OnRestartDone(const std::string& url, bool came_back, double now_s);

 private:
  struct State {
    std::optional<double> kv_high_since;
    bool drained_for_kv = false;
    int probe_failures = 0;
    bool restarting = false;   // a restart (or alert) is in progress
    std::vector<double> restart_times;
    bool last_restart_failed = false;
    double last_tokens_total = -1;
  };
  AgentRules rules_;
  std::map<std::string, State> state_;
};

}  // namespace pagellm::agent
