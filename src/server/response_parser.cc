#include "server/response_parser.h"

#include <fmt/format.h>

#include "parsers/response_parser.h"

namespace pagellm::server {
namespace {

class ParsersAdapter : public ResponseParser {
 public:
  explicit ParsersAdapter(parsers::ResponseParserOptions options) : options_(options), parser_(std::move(options)) {}

  ParsedDelta Feed(std::string_view text_delta) override { return Convert(parser_.Feed(text_delta)); }
  ParsedDelta Finish() override { return Convert(parser_.Finish()); }
  ParsedMessage Parse(std::string_view full_text) override {
    parsers::ParsedMessage m = parsers::ResponseParser::Parse(options_, full_text);
    ParsedMessage out;
    out.content = m.content;
    // As vLLM: content is null when the message is only tool calls and/or reasoning.
    out.has_content = !m.content.empty() || (m.tool_calls.empty() && m.reasoning.empty());
    out.reasoning = m.reasoning;
    out.has_reasoning = !m.reasoning.empty();
    out.tool_calls = parsers::ToolCallsToJson(m.tool_calls);
    return out;
  }

 private:
  static ParsedDelta Convert(const parsers::ParsedDelta& d) {
    ParsedDelta out;
    out.content = d.content;
    out.reasoning = d.reasoning;
    if (!d.tool_calls.empty()) out.tool_calls = parsers::ToolCallDeltasToJson(d.tool_calls);
    return out;
  }

  parsers::ResponseParserOptions options_;
  parsers::ResponseParser parser_;
};

}  // namespace

std::unique_ptr<ResponseParser> ResponseParser::Create(const ParserOptions& options) {
  auto reasoning = parsers::ParseReasoningParserKind(options.reasoning_parser);
  auto tools = parsers::ParseToolParserKind(options.tool_parser);
  if (!reasoning.ok() || !tools.ok()) return nullptr;  // CheckNames refused these at start-up
  bool tools_on = options.tools_enabled && *tools != parsers::ToolParserKind::kNone;
  if (*reasoning == parsers::ReasoningParserKind::kNone && !tools_on) return nullptr;
  parsers::ResponseParserOptions o;
  o.reasoning_parser = *reasoning;
  o.tool_parser = *tools;
  o.tools_enabled = tools_on;
  o.tools = options.tools;
  o.starts_in_reasoning = options.starts_in_reasoning;
  return std::make_unique<ParsersAdapter>(std::move(o));
}

Status ResponseParser::CheckNames(const std::string& reasoning_parser, const std::string& tool_parser) {
  auto reasoning = parsers::ParseReasoningParserKind(reasoning_parser);
  if (!reasoning.ok()) return reasoning.status().WithPrefix("--reasoning-parser");
  auto tools = parsers::ParseToolParserKind(tool_parser);
  if (!tools.ok()) return tools.status().WithPrefix("--tool-call-parser");
  return OkStatus();
}

}  // namespace pagellm::server
