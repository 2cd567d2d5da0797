// Fits a chat request's output constraint to how the model writes its answer:
//  * a forced tool call (tool_choice "required" or named) becomes the call grammar in
//    the model's own format, and the tool parser reads the call back;
//  * with tool_choice "auto", calls of tools marked "strict": true are constrained
//    from their opening on, the rest of the text stays free;
//  * with --reasoning-parser qwen3 and a prompt that leaves the model thinking, the
//    grammar starts after </think>, so the reasoning stays free and the constrained
//    text lands in `content` (vLLM's reasoning-aware structured outputs). When the
//    template already closed the think block (enable_thinking=false) it starts at once.
//
//   PAGELLM_RETURN_IF_ERROR(ApplyChatConstraints(tokenizer, tool_call_parser, &req, &spec.parser));
#pragma once

#include <string>

#include "common/status.h"
#include "server/openai_request.h"
#include "server/response_parser.h"
#include "tokenizer/tokenizer.h"

namespace pagellm::server {

// `parser` must already hold the request's reasoning settings (reasoning_parser,
// starts_in_reasoning); its tool settings are set here for forced calls.
Status ApplyChatConstraints(const tokenizer::Tokenizer& tok, const std::string& tool_call_parser, ChatRequest* req,
                            ParserOptions* parser);

}  // namespace pagellm::server
