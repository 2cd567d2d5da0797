// ResponseParser: the server's seam to reasoning (`--reasoning-parser qwen3`) and
// tool-call (`--tool-call-parser hermes|qwen3_coder`) parsing of one choice's text,
// streaming and non-streaming, producing OpenAI message fields.
//
//   auto p = ResponseParser::Create(options);   // nullptr when nothing is parsed
//   ParsedDelta d = p->Feed(delta.text);        // streaming
//   ParsedDelta last = p->Finish();
//   ParsedMessage m = p->Parse(full_text);      // non-streaming
//
// finish_reason becomes "tool_calls" when at least one tool call was parsed.
// An adapter over pagellm::parsers::ResponseParser (reasoning parsed first, tool calls
// looked for in both reasoning and content; see parsers/response_parser.h) that returns
// OpenAI JSON pieces.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/json.h"
#include "common/status.h"

namespace pagellm::server {

struct ParserOptions {
  std::string reasoning_parser;  // "" | "qwen3"
  std::string tool_parser;       // "" | "hermes" | "qwen3_coder"
  OrderedJson tools;             // the request's tools (schemas for type conversion), or null
  bool tools_enabled = false;    // tools given, tool_choice auto, --enable-auto-tool-choice
  // False when the prompt already closed the reasoning block (enable_thinking=false).
  bool starts_in_reasoning = true;
};

struct ParsedDelta {
  std::string content;
  std::string reasoning;
  OrderedJson tool_calls = OrderedJson::array();  // OpenAI delta shape, with "index"
  bool empty() const { return content.empty() && reasoning.empty() && tool_calls.empty(); }
};

struct ParsedMessage {
  std::string content;
  bool has_content = true;  // false => "content": null (only tool calls)
  std::string reasoning;
  bool has_reasoning = false;
  OrderedJson tool_calls = OrderedJson::array();  // [{id, type, function{name, arguments}}]
};

class ResponseParser {
 public:
  virtual ~ResponseParser() = default;
  // nullptr when `options` asks for no parsing.
  static std::unique_ptr<ResponseParser> Create(const ParserOptions& options);
  // Whether the parser names are known (start-up check of the CLI flags).
  static Status CheckNames(const std::string& reasoning_parser, const std::string& tool_parser);

  virtual ParsedDelta Feed(std::string_view text_delta) = 0;
  virtual ParsedDelta Finish() = 0;
  virtual ParsedMessage Parse(std::string_view full_text) = 0;
};

}  // namespace pagellm::server
