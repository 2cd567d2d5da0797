// What the response parsers produce: the OpenAI-shaped pieces of an assistant
// message (reasoning_content, content, tool_calls), whole or as streaming deltas.
//
//   ParsedMessage msg = ResponseParser::Parse(options, text);
//   OrderedJson message = {{"role", "assistant"}};
//   message["content"] = msg.content.empty() ? OrderedJson() : OrderedJson(msg.content);
//   if (!msg.tool_calls.empty()) message["tool_calls"] = ToolCallsToJson(msg.tool_calls);
//
// Empty strings mean "absent" (the server maps them to JSON null / omits the field,
// as vLLM returns None).
#pragma once

#include <string>
#include <vector>

#include "common/json.h"

namespace pagellm::parsers {

// One complete function call; `type` is always "function".
struct ToolCall {
  std::string id;         // "call_" + 24 hex digits, unique per call
  std::string name;       // function name
  std::string arguments;  // a JSON text (an object for well-formed calls)
};

// A streaming piece of one tool call. The first delta of a call carries id and name
// (and usually the start of the arguments); later deltas carry argument text only.
// Concatenating `arguments` over all deltas of one index gives ToolCall::arguments.
struct ToolCallDelta {
  int index = 0;          // 0-based position of the call in the message
  std::string id;         // set on the first delta of the call only
  std::string name;       // set on the first delta of the call only
  std::string arguments;  // argument text fragment (may be empty)
};

// What one Feed()/Finish() released. Any combination of fields may be set; all empty
// means "nothing to send yet" (text is being held back to decide what it is).
struct ParsedDelta {
  std::string reasoning;
  std::string content;
  std::vector<ToolCallDelta> tool_calls;
  bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
};

// The whole parsed message.
struct ParsedMessage {
  std::string reasoning;
  std::string content;
  std::vector<ToolCall> tool_calls;
};

// [{"id", "type": "function", "function": {"name", "arguments"}}, ...]
OrderedJson ToolCallsToJson(const std::vector<ToolCall>& calls);
// Streaming form: [{"index", "id"?, "type"?, "function": {"name"?, "arguments"}}, ...]
OrderedJson ToolCallDeltasToJson(const std::vector<ToolCallDelta>& deltas);

}  // namespace pagellm::parsers
