// Placeholder until the convert subcommand lands; registers nothing.
#include "cli/commands.h"

namespace pagellm::cli {

void RegisterConvertCommand(CLI::App& app) { (void)app; }

}  // namespace pagellm::cli
