#include "server/chat_constraints.h"

namespace pagellm::server {

Status ApplyChatConstraints(const tokenizer::Tokenizer& tok, const std::string& tool_call_parser, ChatRequest* req,
                            ParserOptions* parser) {
  std::optional<StructuredOutputsParams>& so = req->params.structured_outputs;
  if (req->tool_choice.forces_call()) {
    if (so.has_value()) {
      return InvalidArgumentError("tool_choice: a forced tool call cannot be combined with response_format or "
                                  "structured_outputs");
    }
    // Qwen3's native format is hermes; a server started for qwen3_coder writes XML calls.
    std::string format = tool_call_parser.empty() ? "hermes" : tool_call_parser;
    PAGELLM_ASSIGN_OR_RETURN(StructuredOutputsParams forced, ForcedToolCallConstraint(req->tool_choice, req->tools, format));
    so = std::move(forced);
    parser->tools_enabled = true;
    parser->tool_parser = format;
  } else if (parser->tools_enabled) {  // "auto": constrain the calls of strict tools only
    PAGELLM_ASSIGN_OR_RETURN(std::optional<StructuredOutputsParams> strict,
                             StrictAutoToolCallConstraint(req->tools, tool_call_parser));
    if (strict.has_value() && so.has_value()) {
      return InvalidArgumentError("tools: \"strict\": true with tool_choice \"auto\" cannot be combined with "
                                  "response_format or structured_outputs");
    }
    if (strict.has_value()) so = std::move(strict);
  }
  if (so.has_value() && parser->reasoning_parser == "qwen3" && parser->starts_in_reasoning) {
    std::optional<int32_t> think_end = tok.TokenToId("</think>");
    if (!think_end) return InvalidArgumentError("--reasoning-parser qwen3: the tokenizer has no </think> token");
    so->start_after_token = *think_end;
  }
  return OkStatus();
}

}  // namespace pagellm::server
