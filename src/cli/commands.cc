#include "cli/commands.h"

#include <cstdio>

namespace pagellm::cli {

// router_command.cc (declared here rather than in commands.h, which every command
// includes: one more subcommand should not rebuild them all).
void RegisterRouterCommand(CLI::App& app);
void RegisterAgentCommand(CLI::App& app);    // agent_command.cc
void RegisterRolloutCommand(CLI::App& app);  // rollout_command.cc

namespace {
int g_exit_code = 0;
}  // namespace

void RegisterAllCommands(CLI::App& app) {
  RegisterGenerateCommand(app);
  RegisterTokenizeCommands(app);
  RegisterMakeDummyModelCommand(app);
  RegisterUnpackModelCommand(app);
  RegisterChatTemplateCommand(app);
  RegisterLogitsCommand(app);
  RegisterServeCommand(app);
  RegisterRouterCommand(app);
  RegisterAgentCommand(app);
  RegisterRolloutCommand(app);
  RegisterConvertCommand(app);
  RegisterBenchCommand(app);
  RegisterDistWorkerCommand(app);
}

int ExitCode() { return g_exit_code; }
void SetExitCode(int code) { g_exit_code = code; }

bool ReportStatus(const Status& status) {
  if (status.ok()) return true;
  std::fprintf(stderr, "error: %s\n", status.message().c_str());
  SetExitCode(1);
  return false;
}

}  // namespace pagellm::cli
