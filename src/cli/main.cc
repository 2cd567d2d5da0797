// pagellm: the command line. Each subcommand lives in its own *_command.cc file and
// registers itself here; main only parses, dispatches and maps errors to exit codes.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "common/logging.h"

namespace {

// OpenMP's default is to spin in barriers. When another process takes a core, a
// spinning thread waits for a descheduled peer and a step takes 10-30x longer
// (measured: 25 vs 820 tokens/s on a loaded 2-core machine). libgomp reads its
// environment before main() runs, so set a passive wait policy and re-exec once.
// The user's own OMP_WAIT_POLICY wins.
void EnsurePassiveOpenMpWait(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  execv("/proc/self/exe", argv);  // returns only on failure: carry on spinning
}

}  // namespace

int main(int argc, char** argv) {
  EnsurePassiveOpenMpWait(argv);
  CLI::App app{"pagellm: a serving engine for Qwen-family language models"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("pagellm ") + PAGELLM_VERSION);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "debug, info, warning or error")->capture_default_str();
  app.parse_complete_callback([&] { pagellm::SetLogLevel(log_level); });

  pagellm::cli::RegisterAllCommands(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return pagellm::cli::ExitCode();
}
