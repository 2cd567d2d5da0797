#include "cli/commands.h"

#include <cstdio>

namespace pagellm::cli {
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
