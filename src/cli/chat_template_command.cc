// Placeholder until the chat_template subcommand lands; registers nothing.
#include "cli/commands.h"

namespace pagellm::cli {

void RegisterChatTemplateCommand(CLI::App& app) { (void)app; }

}  // namespace pagellm::cli
