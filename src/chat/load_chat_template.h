// LoadChatTemplate: the chat template for a model path, whatever form the model comes
// in, with vLLM's `--chat-template FILE` override.
//
//   PAGELLM_ASSIGN_OR_RETURN(ChatTemplate t, chat::LoadChatTemplate(model_dir, flags.chat_template));
//
// A directory: chat_template.jinja, else tokenizer_config.json's chat_template (see
// ChatTemplate::FromModelDir). A .gguf file: its `tokenizer.chat_template`.
#pragma once

#include <string>

#include "chat/chat_template.h"
#include "common/status.h"

namespace pagellm::chat {

StatusOr<ChatTemplate> LoadChatTemplate(const std::string& model_path, const std::string& override_path = "");

}  // namespace pagellm::chat
