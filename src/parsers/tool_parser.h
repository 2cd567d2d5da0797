// ToolParser: the streaming interface the tool-call formats implement (hermes,
// qwen3_coder). One instance parses ONE channel of text (the reasoning or the
// content of a message) and turns it into plain text plus tool-call events.
// ResponseParser (response_parser.h) owns the instances, numbers the calls and
// assigns their ids; servers use ResponseParser, not this interface.
//
//   std::unique_ptr<ToolParser> p = MakeToolParser(ToolParserKind::kHermes, tools);
//   ToolEvents ev;
//   p->Feed("Sure.<tool_call>\n{\"name\": \"f\", ", &ev);   // ev: text "Sure."
//   p->Feed("\"arguments\": {}}\n</tool_call>", &ev);       // ev: begin "f", args "{}"
//   p->Finish(&ev);                                         // flushes held-back text
//
// Contract shared by all formats (and checked by the tests):
//  * Split independence: the concatenated events depend only on the concatenated
//    input, never on where the deltas were split. Decisions are therefore made on
//    text prefixes, and text that might still become a tag is held back.
//  * Calls are sequential: kBegin, then zero or more kArgs, before the next kBegin.
//    The kArgs of one call concatenate to its final arguments JSON text.
//  * Text that turns out not to be a well-formed call is released as plain text.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/json.h"
#include "common/status.h"

namespace pagellm::parsers {

enum class ToolParserKind { kNone, kHermes, kQwen3Coder };

// vLLM's --tool-call-parser names: "hermes", "qwen3_coder" (alias "qwen3_xml");
// "" and "none" give kNone.
StatusOr<ToolParserKind> ParseToolParserKind(std::string_view name);
const char* ToolParserKindName(ToolParserKind kind);

struct ToolEvent {
  enum class Kind { kText, kBegin, kArgs };
  Kind kind = Kind::kText;
  std::string text;  // kText: plain text; kBegin: function name; kArgs: argument text
};
using ToolEvents = std::vector<ToolEvent>;

class ToolParser {
 public:
  virtual ~ToolParser() = default;
  // Consumes the next piece of this channel's text.
  virtual void Feed(std::string_view text, ToolEvents* out) = 0;
  // End of the channel: completes or releases whatever is held back.
  virtual void Finish(ToolEvents* out) = 0;
};

// `tools`: the request's OpenAI `tools` array (may be null/empty); qwen3_coder uses
// the parameter schemas to type the values. Returns nullptr for kNone.
std::unique_ptr<ToolParser> MakeToolParser(ToolParserKind kind, const OrderedJson& tools);

// Appends to `out`, merging with a trailing event of the same kind (kText/kArgs).
void AppendEvent(ToolEvents* out, ToolEvent::Kind kind, std::string_view text);

// Releases plain text, dropping whitespace that only separates tool calls: after a
// call, whitespace is held until non-space text arrives (then released with it);
// a following call or the end of the channel drops it. Text before the first call is
// kept verbatim, as vLLM keeps it.
class CallSeparatedText {
 public:
  void Emit(std::string_view text, ToolEvents* out);
  // A call was committed: whitespace held before it is dropped.
  void OnCallBegin() { pending_space_.clear(); after_call_ = false; }
  void OnCallEnd() { after_call_ = true; }
  // End of channel: trailing whitespace after a call is dropped.
  void Finish() { pending_space_.clear(); }

 private:
  bool after_call_ = false;
  std::string pending_space_;
};

}  // namespace pagellm::parsers
