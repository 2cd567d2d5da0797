#include "parsers/tool_parser.h"

#include <fmt/format.h>

#include "parsers/hermes_tool_parser.h"
#include "parsers/qwen3_coder_tool_parser.h"
#include "parsers/text_scan.h"

namespace pagellm::parsers {

StatusOr<ToolParserKind> ParseToolParserKind(std::string_view name) {
  if (name.empty() || name == "none") return ToolParserKind::kNone;
  if (name == "hermes") return ToolParserKind::kHermes;
  if (name == "qwen3_coder" || name == "qwen3_xml") return ToolParserKind::kQwen3Coder;
  return InvalidArgumentError(
      fmt::format("unknown tool call parser '{}' (supported: hermes, qwen3_coder, qwen3_xml)", name));
}

const char* ToolParserKindName(ToolParserKind kind) {
  switch (kind) {
    case ToolParserKind::kNone: return "none";
    case ToolParserKind::kHermes: return "hermes";
    case ToolParserKind::kQwen3Coder: return "qwen3_coder";
  }
  return "?";
}

std::unique_ptr<ToolParser> MakeToolParser(ToolParserKind kind, const OrderedJson& tools) {
  switch (kind) {
    case ToolParserKind::kNone: return nullptr;
    case ToolParserKind::kHermes: return std::make_unique<HermesToolParser>();
    case ToolParserKind::kQwen3Coder: return std::make_unique<Qwen3CoderToolParser>(tools);
  }
  return nullptr;
}

void AppendEvent(ToolEvents* out, ToolEvent::Kind kind, std::string_view text) {
  if (kind != ToolEvent::Kind::kBegin && text.empty()) return;
  if (kind != ToolEvent::Kind::kBegin && !out->empty() && out->back().kind == kind) {
    out->back().text.append(text);
    return;
  }
  out->push_back(ToolEvent{kind, std::string(text)});
}

void CallSeparatedText::Emit(std::string_view text, ToolEvents* out) {
  if (after_call_) {
    size_t p = SkipSpace(text);
    pending_space_.append(text.substr(0, p));
    text.remove_prefix(p);
    if (text.empty()) return;
    AppendEvent(out, ToolEvent::Kind::kText, pending_space_);
    pending_space_.clear();
    after_call_ = false;
  }
  AppendEvent(out, ToolEvent::Kind::kText, text);
}

}  // namespace pagellm::parsers
