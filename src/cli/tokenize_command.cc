// Placeholder until the tokenize subcommand lands; registers nothing.
#include "cli/commands.h"

namespace pagellm::cli {

void RegisterTokenizeCommands(CLI::App& app) { (void)app; }

}  // namespace pagellm::cli
