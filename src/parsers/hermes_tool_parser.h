// Hermes tool-call format (Qwen2.5 / Qwen3, vLLM --tool-call-parser hermes):
//
//   Let me check.<tool_call>
//   {"name": "get_weather", "arguments": {"city": "Paris"}}
//   </tool_call>
//
// Text before a call is plain text. Each <tool_call> body must be exactly one JSON
// object with a string "name"; "arguments" is re-serialized the way vLLM does it
// (json.dumps, see python_json.h); an "arguments" string that itself holds a JSON
// object is decoded once (as vLLM does for Granite-style output); a missing
// "arguments" gives "{}". A body that runs to the end of the text without
// </tool_call> is still a call if it parses (vLLM: "tool call until EOS").
//
// Malformed bodies (invalid JSON, not an object, no name, a body whose first
// non-space character is not '{') are released verbatim as plain text, tags included.
// NOTE: vLLM's non-streaming parser turns the WHOLE output into content when any call
// is malformed; here each call is judged on its own, which keeps the well-formed calls.
//
// Streaming: a call is emitted when its body is complete (at </tool_call> or at the
// end of the text), as kBegin(name) + one kArgs with the whole arguments text. Holding
// the body is what makes "malformed -> content" decidable without ever retracting a
// name that was already streamed; a hermes body is a few tokens of JSON.
#pragma once

#include <string>
#include <string_view>

#include "parsers/tool_parser.h"

namespace pagellm::parsers {

class HermesToolParser : public ToolParser {
 public:
  void Feed(std::string_view text, ToolEvents* out) override;
  void Finish(ToolEvents* out) override;

 private:
  enum class State { kText, kInCall };
  void Run(bool at_end, ToolEvents* out);
  bool StepText(bool at_end, ToolEvents* out);
  bool StepInCall(bool at_end, ToolEvents* out);
  // Emits the call if `body` is a well-formed call, else returns false.
  bool TryEmitCall(std::string_view body, ToolEvents* out);

  State state_ = State::kText;
  std::string buf_;  // input not consumed yet (in kInCall: the body so far)
  CallSeparatedText text_;
};

}  // namespace pagellm::parsers
