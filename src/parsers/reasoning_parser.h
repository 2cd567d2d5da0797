// Reasoning parser `qwen3` (vLLM --reasoning-parser qwen3): splits the model's
// <think>...</think> reasoning from the answer, whole or streaming.
//
//   ReasoningParser p(ReasoningParserKind::kQwen3, /*starts_in_reasoning=*/true);
//   std::vector<ReasoningPiece> pieces;
//   p.Feed("Let me think</th", &pieces);   // reasoning "Let me think"; "</th" held back
//   p.Feed("ink>\n\nHello", &pieces);      // end-of-reasoning marker, content "\n\nHello"
//   p.Finish(&pieces);
//
// Rules (those of vLLM's Qwen3ReasoningParser):
//  * Reasoning is everything before the first </think>; content is everything after
//    it (later <think>/</think> tags in the content are left as text).
//  * A <think> before that </think> is removed (Qwen3 writes it itself; Qwen3.5 has it
//    in the prompt, so its output holds only </think> -- both give the same split).
//  * No </think> by the end of the text: everything is reasoning. vLLM made this
//    choice because with thinking on, a missing </think> means the output was cut
//    off mid-thought (finish_reason "length"). <tool_call> inside the reasoning is not
//    this class's business: ResponseParser runs the tool parser on the reasoning too.
//  * starts_in_reasoning=false (the prompt already closed the reasoning: Qwen3 with
//    enable_thinking=false gets "<think>\n\n</think>\n\n" in the prompt) -> the whole
//    output is content, no tags are interpreted (vLLM's prompt_is_reasoning_end path).
// Streaming: a suffix that may be the start of <think> or </think> is held back
// until the next delta decides it, so tags split across deltas are never leaked.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace pagellm::parsers {

enum class ReasoningParserKind { kNone, kQwen3 };

// vLLM's --reasoning-parser names: "qwen3"; "" and "none" give kNone.
StatusOr<ReasoningParserKind> ParseReasoningParserKind(std::string_view name);

// True when the rendered prompt already closed the reasoning block, i.e. it ends
// (ignoring whitespace) with </think>; the generation then holds no reasoning.
bool PromptEndsReasoning(std::string_view prompt);

struct ReasoningPiece {
  enum class Kind { kReasoning, kContent, kReasoningEnd };
  Kind kind;
  std::string text;  // empty for kReasoningEnd
};

class ReasoningParser {
 public:
  // kNone behaves as starts_in_reasoning=false: everything is content.
  ReasoningParser(ReasoningParserKind kind, bool starts_in_reasoning);
  void Feed(std::string_view text, std::vector<ReasoningPiece>* out);
  void Finish(std::vector<ReasoningPiece>* out);
  bool in_reasoning() const { return in_reasoning_; }

 private:
  void Emit(ReasoningPiece::Kind kind, std::string_view text, std::vector<ReasoningPiece>* out);
  void Run(bool at_end, std::vector<ReasoningPiece>* out);

  bool in_reasoning_;
  bool seen_start_tag_ = false;
  std::string buf_;  // held-back reasoning text (a possible partial tag)
};

}  // namespace pagellm::parsers
