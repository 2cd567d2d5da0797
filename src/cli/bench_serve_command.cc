// Placeholder until the bench_serve subcommand lands; registers nothing.
#include "cli/commands.h"

namespace pagellm::cli {

void RegisterBenchServeCommand(CLI::App& app) { (void)app; }

}  // namespace pagellm::cli
