// pagellm: the command line. Each subcommand lives in its own *_command.cc file and
// registers itself here; main only parses, dispatches and maps errors to exit codes.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "common/logging.h"

int main(int argc, char** argv) {
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
