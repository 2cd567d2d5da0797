#include "parsers/response_parser.h"

#include <random>

#include "common/status.h"

namespace pagellm::parsers {

std::string MakeToolCallId() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id.push_back(kHex[rng() & 15]);
  return id;
}

ResponseParser::ResponseParser(ResponseParserOptions options)
    : reasoning_(options.reasoning_parser, options.starts_in_reasoning) {
  if (options.tools_enabled && options.tool_parser != ToolParserKind::kNone) {
    reasoning_tools_ = MakeToolParser(options.tool_parser, options.tools);
    content_tools_ = MakeToolParser(options.tool_parser, options.tools);
  }
}

ParsedDelta ResponseParser::Feed(std::string_view text_delta) {
  PAGELLM_CHECK(!finished_);
  ParsedDelta delta;
  std::vector<ReasoningPiece> pieces;
  reasoning_.Feed(text_delta, &pieces);
  Route(pieces, /*at_end=*/false, &delta);
  return delta;
}

ParsedDelta ResponseParser::Finish() {
  PAGELLM_CHECK(!finished_);
  finished_ = true;
  ParsedDelta delta;
  std::vector<ReasoningPiece> pieces;
  bool was_in_reasoning = reasoning_.in_reasoning();
  reasoning_.Finish(&pieces);
  // The reasoning never closed: its channel ends with the text.
  if (was_in_reasoning) pieces.push_back(ReasoningPiece{ReasoningPiece::Kind::kReasoningEnd, ""});
  Route(pieces, /*at_end=*/true, &delta);
  if (content_tools_) {
    ToolEvents events;
    content_tools_->Finish(&events);
    ApplyToolEvents(events, /*reasoning_channel=*/false, &delta);
  }
  return delta;
}

ParsedMessage ResponseParser::Parse(const ResponseParserOptions& options, std::string_view text) {
  ResponseParser parser(options);
  parser.Feed(text);
  parser.Finish();
  return parser.message_;
}

void ResponseParser::Route(const std::vector<ReasoningPiece>& pieces, bool at_end, ParsedDelta* delta) {
  for (const ReasoningPiece& piece : pieces) {
    bool reasoning_channel = piece.kind != ReasoningPiece::Kind::kContent;
    ToolParser* tools = reasoning_channel ? reasoning_tools_.get() : content_tools_.get();
    if (tools == nullptr) {
      AppendText(reasoning_channel, piece.text, delta);
      continue;
    }
    ToolEvents events;
    if (piece.kind == ReasoningPiece::Kind::kReasoningEnd) {
      tools->Finish(&events);
    } else {
      tools->Feed(piece.text, &events);
    }
    ApplyToolEvents(events, reasoning_channel, delta);
  }
}

void ResponseParser::ApplyToolEvents(const ToolEvents& events, bool reasoning_channel, ParsedDelta* delta) {
  for (const ToolEvent& event : events) {
    switch (event.kind) {
      case ToolEvent::Kind::kText:
        AppendText(reasoning_channel, event.text, delta);
        break;
      case ToolEvent::Kind::kBegin: {
        ToolCall call{MakeToolCallId(), event.text, ""};
        int index = static_cast<int>(message_.tool_calls.size());
        delta->tool_calls.push_back(ToolCallDelta{index, call.id, call.name, ""});
        message_.tool_calls.push_back(std::move(call));
        break;
      }
      case ToolEvent::Kind::kArgs: {
        PAGELLM_CHECK(!message_.tool_calls.empty());
        int index = static_cast<int>(message_.tool_calls.size()) - 1;
        message_.tool_calls.back().arguments.append(event.text);
        if (delta->tool_calls.empty() || delta->tool_calls.back().index != index) {
          delta->tool_calls.push_back(ToolCallDelta{index, "", "", ""});
        }
        delta->tool_calls.back().arguments.append(event.text);
        break;
      }
    }
  }
}

void ResponseParser::AppendText(bool reasoning_channel, std::string_view text, ParsedDelta* delta) {
  if (reasoning_channel) {
    delta->reasoning.append(text);
    message_.reasoning.append(text);
  } else {
    delta->content.append(text);
    message_.content.append(text);
  }
}

}  // namespace pagellm::parsers
