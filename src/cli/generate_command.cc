// Placeholder until the generate subcommand lands; registers nothing.
#include "cli/commands.h"

namespace pagellm::cli {

void RegisterGenerateCommand(CLI::App& app) { (void)app; }

}  // namespace pagellm::cli
