// Placeholder until the serve subcommand lands; registers nothing.
#include "cli/commands.h"

namespace pagellm::cli {

void RegisterServeCommand(CLI::App& app) { (void)app; }

}  // namespace pagellm::cli
