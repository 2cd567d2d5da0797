// Qwen3-Coder XML tool-call format (Qwen3.5, vLLM --tool-call-parser qwen3_coder):
//
//   Sure.<tool_call>
//   <function=get_weather>
//   <parameter=city>
//   Paris
//   </parameter>
//   <parameter=days>
//   3
//   </parameter>
//   </function>
//   </tool_call>
//
// -> name "get_weather", arguments {"city": "Paris", "days": 3} (typed by the tool's
// schema, see param_convert.h; serialized like Python's json.dumps). As in vLLM:
//  * one leading and one trailing "\n" of a value are stripped, nothing else;
//  * a value also ends at the next <parameter=, at </function> or at </tool_call>
//    (missing </parameter>), and a call also ends at </tool_call> or the end of the
//    text (missing </function>);
//  * a bare <function=...> without <tool_call> is a call too (vLLM's fallback);
//  * several <function=> blocks inside one <tool_call> are several calls.
// Malformed: <tool_call> not followed (after whitespace) by <function=, or a function
// header with '<' or a newline before its '>' -> released verbatim as plain text.
//
// Streaming: the call is committed at the '>' of <function=NAME> (kBegin + "{"); each
// parameter is emitted as `"key": value` (", "-separated) once its value has ended,
// because its JSON type can depend on the whole value; "}" closes the call.
#pragma once

#include <string>
#include <string_view>

#include "common/json.h"
#include "parsers/tool_parser.h"

namespace pagellm::parsers {

class Qwen3CoderToolParser : public ToolParser {
 public:
  explicit Qwen3CoderToolParser(OrderedJson tools) : tools_(std::move(tools)) {}
  void Feed(std::string_view text, ToolEvents* out) override;
  void Finish(ToolEvents* out) override;

 private:
  enum class State { kText, kAwaitFunction, kFunctionName, kInFunction, kParamName, kParamValue, kAfterFunction };
  void Run(bool at_end, ToolEvents* out);
  bool Step(bool at_end, ToolEvents* out);
  bool StepText(bool at_end, ToolEvents* out);
  bool StepAwaitFunction(bool at_end, ToolEvents* out);
  bool StepFunctionName(bool at_end, ToolEvents* out);
  bool StepInFunction(bool at_end, ToolEvents* out);
  bool StepParamName(bool at_end, ToolEvents* out);
  bool StepParamValue(bool at_end, ToolEvents* out);
  bool StepAfterFunction(bool at_end, ToolEvents* out);
  // Uncommitted tags turned out not to be a call: release them as text.
  void Revert(ToolEvents* out);
  void BeginCall(std::string name, ToolEvents* out);
  void EmitParam(ToolEvents* out);
  void EndCall(ToolEvents* out);

  OrderedJson tools_;
  const OrderedJson* properties_ = nullptr;  // schema of the current call's parameters
  State state_ = State::kText;
  std::string buf_;        // input not consumed yet
  std::string raw_;        // consumed but uncommitted tag text, released on Revert
  std::string param_name_;
  std::string param_value_;
  int num_params_ = 0;     // parameters emitted in the current call
  CallSeparatedText text_;
};

}  // namespace pagellm::parsers
