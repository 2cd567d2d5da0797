// `pagellm agent --router URL [--rules FILE] [--audit-log FILE]`: the self-healing loop
// beside a router (src/agent). SIGINT/SIGTERM stop it.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>

#include "agent/fleet_agent.h"
#include "cli/commands.h"
#include "common/logging.h"

namespace pagellm::cli {
namespace {

struct AgentFlags {
  std::string router;
  std::string rules_file;
  std::string audit_log = "-";
  double interval_s = 1.0;
  double timeout_s = 5.0;
};

Status RunAgent(const AgentFlags& f) {
  std::string rules_text = "{}";
  if (!f.rules_file.empty()) {
    std::ifstream in(f.rules_file);
    if (!in) return InvalidArgumentError("--rules: cannot read " + f.rules_file);
    std::stringstream ss;
    ss << in.rdbuf();
    rules_text = ss.str();
  }
  PAGELLM_ASSIGN_OR_RETURN(agent::AgentRules rules, agent::ParseAgentRules(rules_text));
  PAGELLM_ASSIGN_OR_RETURN(std::unique_ptr<agent::AuditLog> audit, agent::AuditLog::Open(f.audit_log));
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
  std::atomic<bool> stop{false};
  agent::FleetAgent fleet({.router_url = f.router, .interval_s = f.interval_s, .timeout_s = f.timeout_s}, rules, *audit);
  std::thread loop([&] { fleet.Run(stop); });
  PLOG_INFO("agent watching the workers of {} (kv_pressure: above {} for {} s; unready: {} failed probes, {})",
            f.router, rules.kv_pressure.above, rules.kv_pressure.for_s, rules.unready.failures,
            rules.unready.restart_command.empty() ? "alert only" : "restart");
  int sig = 0;
  sigwait(&set, &sig);
  stop = true;
  loop.join();
  return OkStatus();
}

}  // namespace

void RegisterAgentCommand(CLI::App& app) {
  auto f = std::make_shared<AgentFlags>();
  CLI::App* cmd = app.add_subcommand("agent", "watch a router's workers and heal them by rules (drain, reclaim, restart)");
  cmd->add_option("--router", f->router, "the router's base URL, http://HOST:PORT")->required();
  cmd->add_option("--rules", f->rules_file, "rules file (JSON; see README, Operations); default: the built-in rules");
  cmd->add_option("--audit-log", f->audit_log, "JSON-lines audit trail of every action ('-': stdout)")
      ->capture_default_str();
  cmd->add_option("--interval", f->interval_s, "seconds between rounds")->capture_default_str();
  cmd->add_option("--timeout", f->timeout_s, "seconds a worker or the router may take to answer")->capture_default_str();
  cmd->callback([f] { ReportStatus(RunAgent(*f)); });
}

}  // namespace pagellm::cli
