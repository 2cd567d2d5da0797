// Chat messages as the OpenAI API sends them -> what HF chat templates expect, as vLLM's
// chat_utils prepares them.
//
//   PAGELLM_ASSIGN_OR_RETURN(OrderedJson msgs, NormalizeMessages(body["messages"]));
//   tmpl.Render(msgs, tools, /*add_generation_prompt=*/true, kwargs);
//
// - role must be system, developer, user, assistant or tool;
// - content: a string stays; null or missing becomes ""; an array of parts becomes, by
//   `content_format` (--chat-template-content-format), its text parts joined by "\n"
//   ("string", for templates that only print content, such as Qwen3's) or a list of
//   {"type": "text", "text"} parts ("openai", for templates that loop over them, such as
//   Qwen3.5's); other part types (images, audio) are refused;
// - assistant tool_calls whose function.arguments is a JSON string are parsed into an
//   object, so templates that iterate `arguments|items` work (a string that is not
//   valid JSON is kept as a string, as the template may print it verbatim).
#pragma once

#include "chat/content_format.h"
#include "common/json.h"
#include "common/status.h"

namespace pagellm::server {

StatusOr<OrderedJson> NormalizeMessages(const OrderedJson& messages,
                                        chat::ContentFormat content_format = chat::ContentFormat::kString);

// `tools`: array of {"type": "function", "function": {"name", ...}}.
StatusOr<OrderedJson> ValidateTools(const OrderedJson& tools);

}  // namespace pagellm::server
