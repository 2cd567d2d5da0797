#include "chat/load_chat_template.h"

namespace pagellm::chat {

StatusOr<ChatTemplate> LoadChatTemplate(const std::string& model_path, const std::string& override_path) {
  return ChatTemplate::FromModelDir(model_path, override_path);
}

}  // namespace pagellm::chat
