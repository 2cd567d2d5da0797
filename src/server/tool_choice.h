// tool_choice: OpenAI's field ("auto" | "none" | "required" | {"type": "function",
// "function": {"name": ...}}) and the constraint a forced choice puts on the output.
//
//   PAGELLM_ASSIGN_OR_RETURN(ToolChoice tc, ParseToolChoice(body["tool_choice"]));
//   if (tc.forces_call()) {
//     PAGELLM_ASSIGN_OR_RETURN(StructuredOutputsParams p, ForcedToolCallConstraint(tc, tools, "hermes"));
//     params.structured_outputs = p;   // the model must write the call, in its own format
//   }
//
// A forced call is written in the model's own tool-call format (hermes JSON inside
// <tool_call> for Qwen3, the XML parameter form for qwen3_coder) and parsed back by the
// same tool parser as auto calls, so the message is the same either way; vLLM instead
// asks for bare JSON and builds the call itself, which the chat template never shows
// the model.
#pragma once

#include <optional>
#include <string>

#include "common/json.h"
#include "common/status.h"
#include "sched/structured_outputs_params.h"

namespace pagellm::server {

struct ToolChoice {
  std::string mode = "auto";  // "auto" | "none" | "required" | "named"
  std::string name;           // mode "named": the function to call
  bool forces_call() const { return mode == "required" || mode == "named"; }
};

StatusOr<ToolChoice> ParseToolChoice(const OrderedJson& tool_choice);

// The grammar of a forced call: one call of `choice.name`, or ("required") one or more
// calls of any of `tools`. `tool_parser` is "hermes" or "qwen3_coder". 400 when the
// named function is not among the tools or there are no tools.
StatusOr<StructuredOutputsParams> ForcedToolCallConstraint(const ToolChoice& choice, const OrderedJson& tools,
                                                           const std::string& tool_parser);

// tool_choice "auto" with tools marked "strict": true: the text stays free, but a call
// of a strict tool, from its opening in the model's format on, must be a valid call
// (structural_tag.h). nullopt when no tool is strict. 400 when the format cannot be
// constrained (a tool parser other than hermes / qwen3_coder).
StatusOr<std::optional<StructuredOutputsParams>> StrictAutoToolCallConstraint(const OrderedJson& tools,
                                                                              const std::string& tool_parser);

}  // namespace pagellm::server
