#include "chat/load_chat_template.h"

#include <filesystem>

#include <fmt/format.h>

#include "common/mapped_file.h"
#include "gguf/gguf_file.h"

namespace pagellm::chat {
namespace {

bool IsGgufFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::string ext = std::filesystem::path(path).extension().string();
  return ext == ".gguf" || ext == ".GGUF";
}

// `tokenizer.chat_template` (or the override file) with the special tokens named by the
// tokenizer.ggml.*_token_id keys, spelled as tokenizer.ggml.tokens spells them.
StatusOr<ChatTemplate> FromGguf(const std::string& path, const std::string& override_path) {
  PAGELLM_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> gguf, GgufFile::Open(path));
  std::string source;
  if (!override_path.empty()) {
    PAGELLM_ASSIGN_OR_RETURN(source, ReadFileToString(override_path));
  } else if (gguf->Find("tokenizer.chat_template") != nullptr) {
    PAGELLM_ASSIGN_OR_RETURN(source, gguf->GetString("tokenizer.chat_template"));
  } else {
    return NotFoundError(fmt::format("{} has no tokenizer.chat_template; pass --chat-template FILE", gguf->what()));
  }
  OrderedJson special = OrderedJson::object();
  StatusOr<std::vector<std::string>> tokens = gguf->GetStringArray("tokenizer.ggml.tokens");
  for (const char* name : {"bos", "eos", "unk", "pad"}) {
    StatusOr<int64_t> id = gguf->GetInt(fmt::format("tokenizer.ggml.{}_token_id", name == std::string("pad") ? "padding" : name));
    if (!id.ok() || !tokens.ok()) continue;
    if (*id < 0 || *id >= static_cast<int64_t>(tokens->size())) {
      return InvalidArgumentError(fmt::format("{}: tokenizer.ggml.{}_token_id {} is not a token id", gguf->what(), name, *id));
    }
    special[fmt::format("{}_token", name)] = (*tokens)[static_cast<size_t>(*id)];
  }
  StatusOr<ChatTemplate> tmpl = ChatTemplate::FromStringWithTokens(std::move(source), special);
  if (!tmpl.ok()) return InvalidArgumentError(fmt::format("{}: chat template: {}", gguf->what(), tmpl.status().message()));
  return tmpl;
}

}  // namespace

StatusOr<ChatTemplate> LoadChatTemplate(const std::string& model_path, const std::string& override_path) {
  if (IsGgufFile(model_path)) return FromGguf(model_path, override_path);
  return ChatTemplate::FromModelDir(model_path, override_path);
}

}  // namespace pagellm::chat
