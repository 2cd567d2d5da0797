#include "parsers/reasoning_parser.h"

#include <fmt/format.h>

#include "parsers/text_scan.h"

namespace pagellm::parsers {
namespace {

constexpr std::string_view kStart = "<think>";
constexpr std::string_view kEnd = "</think>";

}  // namespace

StatusOr<ReasoningParserKind> ParseReasoningParserKind(std::string_view name) {
  if (name.empty() || name == "none") return ReasoningParserKind::kNone;
  if (name == "qwen3") return ReasoningParserKind::kQwen3;
  return InvalidArgumentError(fmt::format("unknown reasoning parser '{}' (supported: qwen3)", name));
}

bool PromptEndsReasoning(std::string_view prompt) {
  std::string_view t = TrimSpace(prompt);
  return t.size() >= kEnd.size() && t.substr(t.size() - kEnd.size()) == kEnd;
}

ReasoningParser::ReasoningParser(ReasoningParserKind kind, bool starts_in_reasoning)
    : in_reasoning_(kind != ReasoningParserKind::kNone && starts_in_reasoning) {}

void ReasoningParser::Feed(std::string_view text, std::vector<ReasoningPiece>* out) {
  if (!in_reasoning_) {
    Emit(ReasoningPiece::Kind::kContent, text, out);
    return;
  }
  buf_.append(text);
  Run(/*at_end=*/false, out);
}

void ReasoningParser::Finish(std::vector<ReasoningPiece>* out) {
  if (in_reasoning_) Run(/*at_end=*/true, out);
}

void ReasoningParser::Run(bool at_end, std::vector<ReasoningPiece>* out) {
  while (in_reasoning_) {
    TagMatch m = seen_start_tag_ ? FindFirstTag(buf_, {kEnd}) : FindFirstTag(buf_, {kEnd, kStart});
    if (!m.found()) {
      size_t safe = at_end ? buf_.size()
                           : (seen_start_tag_ ? SafePrefixLen(buf_, {kEnd}) : SafePrefixLen(buf_, {kEnd, kStart}));
      Emit(ReasoningPiece::Kind::kReasoning, std::string_view(buf_).substr(0, safe), out);
      buf_.erase(0, safe);
      return;
    }
    Emit(ReasoningPiece::Kind::kReasoning, std::string_view(buf_).substr(0, m.pos), out);
    if (m.tag_idx == 1) {  // <think>: dropped once
      seen_start_tag_ = true;
      buf_.erase(0, m.pos + kStart.size());
      continue;
    }
    std::string rest = buf_.substr(m.pos + kEnd.size());
    buf_.clear();
    in_reasoning_ = false;
    out->push_back(ReasoningPiece{ReasoningPiece::Kind::kReasoningEnd, ""});
    Emit(ReasoningPiece::Kind::kContent, rest, out);
  }
}

void ReasoningParser::Emit(ReasoningPiece::Kind kind, std::string_view text, std::vector<ReasoningPiece>* out) {
  if (text.empty()) return;
  if (!out->empty() && out->back().kind == kind) {
    out->back().text.append(text);
    return;
  }
  out->push_back(ReasoningPiece{kind, std::string(text)});
}

}  // namespace pagellm::parsers
