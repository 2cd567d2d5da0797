// Placeholder until the make_dummy_model subcommand lands; registers nothing.
#include "cli/commands.h"

namespace pagellm::cli {

void RegisterMakeDummyModelCommand(CLI::App& app) { (void)app; }

}  // namespace pagellm::cli
