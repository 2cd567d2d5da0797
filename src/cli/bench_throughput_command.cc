// Placeholder until the bench_throughput subcommand lands; registers nothing.
#include "cli/commands.h"

namespace pagellm::cli {

void RegisterBenchThroughputCommand(CLI::App& app) { (void)app; }

}  // namespace pagellm::cli
