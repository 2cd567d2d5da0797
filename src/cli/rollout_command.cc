// `pagellm rollout --router URL --new CMD --stop CMD [--old CMD]`: a rolling restart of
// the router's workers with automatic rollback (src/agent/rollout.h). Exits 0 when
// every worker runs the new version, non-zero when one regressed (rolled back) or a
// step failed.
#include "agent/rollout.h"
#include "cli/commands.h"

namespace pagellm::cli {
namespace {

struct RolloutFlags {
  agent::RolloutOptions options;
  std::string audit_log = "-";
};

Status RunRollout(const RolloutFlags& f) {
  PAGELLM_ASSIGN_OR_RETURN(std::unique_ptr<agent::AuditLog> audit, agent::AuditLog::Open(f.audit_log));
  agent::Rollout rollout(f.options, *audit);
  return rollout.Run();
}

}  // namespace

void RegisterRolloutCommand(CLI::App& app) {
  auto f = std::make_shared<RolloutFlags>();
  agent::RolloutOptions& o = f->options;
  CLI::App* cmd = app.add_subcommand("rollout", "rolling restart of a router's workers, rolled back on a P99 regression");
  cmd->add_option("--router", o.router_url, "the router's base URL, http://HOST:PORT")->required();
  cmd->add_option("--new", o.new_command, "shell command starting the new version for {url} / {host} / {port}")
      ->required();
  cmd->add_option("--stop", o.stop_command, "shell command stopping what serves {port} (after it is drained)")
      ->required();
  cmd->add_option("--old", o.old_command, "shell command starting the old version again (rollback)");
  cmd->add_option("--window", o.window_s, "seconds of traffic compared after each restart")->capture_default_str();
  cmd->add_option("--initial-delay", o.initial_delay_s, "seconds after a readmission before the window starts "
                  "(the backlog from the restart settles; Argo Rollouts' analysis initialDelay)")
      ->capture_default_str();
  cmd->add_option("--max-regression", o.max_regression, "allowed rise of P99 TTFT / ITL over the old workers'")
      ->capture_default_str();
  cmd->add_option("--regression-slack", o.regression_slack_s,
                  "seconds a P99 must also rise by to count (noise floor of small windows)")
      ->capture_default_str();
  cmd->add_option("--min-requests", o.min_requests, "requests the new worker must serve to be judged")
      ->capture_default_str();
  cmd->add_option("--ready-timeout", o.ready_timeout_s, "seconds a started worker may take to serve")
      ->capture_default_str();
  cmd->add_option("--drain-timeout", o.drain_timeout_s, "seconds a drained worker may take to finish")
      ->capture_default_str();
  cmd->add_option("--audit-log", f->audit_log, "JSON-lines record of every step ('-': stdout)")->capture_default_str();
  cmd->callback([f] { ReportStatus(RunRollout(*f)); });
}

}  // namespace pagellm::cli
