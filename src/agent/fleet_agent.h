// FleetAgent: `pagellm agent`, the self-healing loop beside a router. Every interval it
// lists the router's workers (GET /admin/workers), scrapes each worker's /metrics and
// probes it with a real 1-token generation, feeds the samples to the rules
// (agent_rules.h) and carries out what they decide through the router's admin API and
// the workers' own endpoints, writing an audit record for every action. It reaches
// the fleet over HTTP only; a restart runs the operator's command in a thread of its
// own, so the other workers stay watched meanwhile.
//
//   FleetAgent agent(options, rules, audit);
//   agent.Run(stop_flag);   // until *stop_flag
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agent/agent_rules.h"
#include "agent/audit_log.h"

namespace pagellm::agent {

struct FleetAgentOptions {
  std::string router_url;
  double interval_s = 1.0;
  double timeout_s = 5.0;  // per call to a worker or the router
};

class FleetAgent {
 public:
  FleetAgent(FleetAgentOptions options, AgentRules rules, AuditLog& audit)
      : options_(std::move(options)), rules_(rules), eval_(std::move(rules)), audit_(audit) {}
  ~FleetAgent();
  void Run(const std::atomic<bool>& stop);
  // One round (tests and Run).
  void RunRound();

 private:
  WorkerSample Sample(const std::string& url);
  void Execute(const Decision& d);
  void Restart(Decision d);  // on its own thread
  // kv_pressure's action: drain, preempt, maybe reset; what each freed goes into `rec`.
  void Reclaim(const std::string& worker, AuditRecord* rec);
  OrderedJson RouterPost(const std::string& path, const std::string& url);

  FleetAgentOptions options_;
  AgentRules rules_;
  std::mutex mu_;  // guards eval_
  RuleEvaluator eval_;
  AuditLog& audit_;
  std::vector<std::thread> restarts_;
  std::atomic<bool> stopping_{false};
};

}  // namespace pagellm::agent
