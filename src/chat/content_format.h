// How a chat template wants message `content`: as a string, or as OpenAI's list of
// parts. vLLM's --chat-template-content-format decides the same question.
//
//   ContentFormat f = DetectContentFormat(program);   // kOpenAi for Qwen3.5, kString for Qwen3
//
// A template "wants parts" when it loops over a message's content: `for x in m.content`,
// `for x in m['content']`, over a variable set from one (`set c = m.content`), or over a
// macro parameter that some call passes a message's content to (Qwen3.5's
// `render_content(message.content)` whose body does `for item in content`). A template that
// only prints content gets the text parts joined with "\n", as vLLM's "string" format does.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace pagellm::chat {

struct Node;

enum class ContentFormat { kString, kOpenAi };

// "auto" (empty optional result), "string" or "openai".
struct ContentFormatOption {
  bool automatic = true;
  ContentFormat format = ContentFormat::kString;
};
StatusOr<ContentFormatOption> ParseContentFormatOption(const std::string& text);
const char* ContentFormatName(ContentFormat format);

ContentFormat DetectContentFormat(const std::vector<std::unique_ptr<Node>>& program);

}  // namespace pagellm::chat
