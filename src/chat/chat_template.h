// ChatTemplate: renders a Hugging Face chat template (Jinja) into a prompt string,
// exactly as transformers' apply_chat_template(tokenize=False) would.
//
// The template is parsed once; Render is const and thread-safe, so one ChatTemplate
// serves every request. Special tokens (bos_token, eos_token, pad_token, unk_token,
// additional_special_tokens, ...) are passed to the template the way transformers
// passes tokenizer.special_tokens_map: unset (null) tokens are left undefined.
//
//   PAGELLM_ASSIGN_OR_RETURN(ChatTemplate tmpl, ChatTemplate::FromModelDir("/models/qwen3"));
//   OrderedJson messages = OrderedJson::parse(R"([{"role": "user", "content": "Hi"}])");
//   PAGELLM_ASSIGN_OR_RETURN(std::string prompt,
//       tmpl.Render(messages, nullptr, /*add_generation_prompt=*/true, {{"enable_thinking", false}}));
//
// NOTE: message content is passed through untouched (string, list of parts or null);
// flattening OpenAI content parts for string-only templates is the server's job, as in
// vLLM's chat_utils.
#pragma once

#include <memory>
#include <string>

#include "chat/content_format.h"
#include "common/json.h"
#include "common/status.h"

namespace pagellm::chat {

struct Node;

class ChatTemplate {
 public:
  // tokenizer_config.json: `chat_template` (a string, or a list of {name, template}
  // from which "default" is taken) plus its special tokens.
  static StatusOr<ChatTemplate> FromTokenizerConfig(const std::string& tokenizer_config_json_path);
  // A model directory: tokenizer_config.json for special tokens; the template comes
  // from `template_path` if given, else chat_template.jinja when present
  // (transformers gives that file precedence), else tokenizer_config.json.
  static StatusOr<ChatTemplate> FromModelDir(const std::string& model_dir, const std::string& template_path = "");
  // Empty bos/eos strings leave those variables undefined.
  static StatusOr<ChatTemplate> FromString(std::string source, std::string bos_token, std::string eos_token);
  // `special_tokens`: object of name -> string, list of strings, or null (skipped).
  static StatusOr<ChatTemplate> FromStringWithTokens(std::string source, const OrderedJson& special_tokens);

  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;
  ~ChatTemplate();

  // messages: array of message objects. tools: array, or null for "no tools" (the
  // template then sees tools=None). extra_kwargs: object (chat_template_kwargs), or null.
  StatusOr<std::string> Render(const OrderedJson& messages, const OrderedJson& tools, bool add_generation_prompt,
                               const OrderedJson& extra_kwargs) const;

  const std::string& source() const { return source_; }
  // Whether the template loops over message content (content_format.h): what
  // --chat-template-content-format auto resolves to.
  ContentFormat detected_content_format() const { return detected_content_format_; }
  // Special tokens given to the template (object of name -> string or list).
  const OrderedJson& special_tokens() const { return special_tokens_; }

 private:
  ChatTemplate() = default;
  std::string source_;
  std::unique_ptr<std::vector<std::unique_ptr<Node>>> program_;
  OrderedJson special_tokens_;  // object of name -> string / list of strings
  ContentFormat detected_content_format_ = ContentFormat::kString;
};

}  // namespace pagellm::chat
