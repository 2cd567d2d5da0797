// ResponseParser: the single entry point the server uses to turn generated text
// into an OpenAI assistant message -- reasoning_content, content and tool_calls --
// either streaming (Feed each text delta, then Finish) or all at once (Parse).
//
//   ResponseParserOptions opts;
//   opts.reasoning_parser = ReasoningParserKind::kQwen3;        // --reasoning-parser qwen3
//   opts.tool_parser = ToolParserKind::kQwen3Coder;             // --tool-call-parser qwen3_coder
//   opts.tools_enabled = has_tools && tool_choice != "none";    // + --enable-auto-tool-choice
//   opts.tools = request["tools"];
//   opts.starts_in_reasoning = enable_thinking && !PromptEndsReasoning(prompt);
//
//   // Streaming:
//   ResponseParser parser(opts);
//   for (each engine text delta) {
//     ParsedDelta d = parser.Feed(delta.text);
//     if (!d.empty()) SendChunk(d.reasoning, d.content, ToolCallDeltasToJson(d.tool_calls));
//   }
//   ParsedDelta last = parser.Finish();            // ALWAYS call: releases held-back text
//   finish_reason = parser.has_tool_calls() ? "tool_calls" : engine_finish_reason;
//
//   // Non-streaming:
//   ParsedMessage msg = ResponseParser::Parse(opts, full_text);
//   finish_reason = msg.tool_calls.empty() ? engine_finish_reason : "tool_calls";
//
// finish_reason: as in vLLM, it becomes "tool_calls" whenever at least one tool call
// was parsed (vLLM replaces the engine's reason when auto tool choice found calls).
//
// How reasoning and tool parsing compose (the choice made here, and why):
//  1. The reasoning parser splits the text into a reasoning channel and a content
//     channel (see reasoning_parser.h).
//  2. When tools are enabled, the tool parser runs on BOTH channels (one instance
//     each). A tool call found inside <think> is removed from the reasoning and
//     reported as a tool call; the reasoning continues after it until </think>.
//     Qwen3.5 often emits <tool_call> inside its reasoning (with or without closing
//     </think> first); vLLM #39056 reports agent loops stopping because such calls
//     were lost. vLLM's own fix treats <tool_call><function= as an implicit end of
//     reasoning; scanning the reasoning channel gives the same result for that
//     case (the golden tests check it) and also keeps calls that are followed by more
//     reasoning and a </think>, which vLLM's partition at </think> loses.
//  3. Tool-call indices run across both channels in order of appearance.
// Streaming and non-streaming give identical results for any split of the text into
// deltas (Parse is Feed(all) + Finish, and every parser is split-independent).
// Text that might still be a tag is held back, so a delta can be empty.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/json.h"
#include "parsers/parsed_types.h"
#include "parsers/reasoning_parser.h"
#include "parsers/tool_parser.h"

namespace pagellm::parsers {

struct ResponseParserOptions {
  ReasoningParserKind reasoning_parser = ReasoningParserKind::kNone;
  ToolParserKind tool_parser = ToolParserKind::kNone;
  // The request has tools and tool_choice is not "none" (and the server runs with
  // auto tool choice). When false, tool-call markup stays plain text.
  bool tools_enabled = false;
  // The request's OpenAI "tools" array; qwen3_coder types parameter values with it.
  OrderedJson tools;
  // False when the prompt already closed the reasoning block (enable_thinking=false,
  // or PromptEndsReasoning(prompt)); the output is then all content.
  bool starts_in_reasoning = true;
};

class ResponseParser {
 public:
  explicit ResponseParser(ResponseParserOptions options);

  // Consumes the next text delta; returns what can be released now.
  ParsedDelta Feed(std::string_view text_delta);
  // End of generation: releases everything still held back. Call exactly once.
  ParsedDelta Finish();

  // Everything released so far (the final message after Finish).
  const ParsedMessage& message() const { return message_; }
  bool has_tool_calls() const { return !message_.tool_calls.empty(); }

  // Non-streaming: the whole message at once.
  static ParsedMessage Parse(const ResponseParserOptions& options, std::string_view text);

 private:
  void Route(const std::vector<ReasoningPiece>& pieces, bool at_end, ParsedDelta* delta);
  void ApplyToolEvents(const ToolEvents& events, bool reasoning_channel, ParsedDelta* delta);
  void AppendText(bool reasoning_channel, std::string_view text, ParsedDelta* delta);

  ReasoningParser reasoning_;
  std::unique_ptr<ToolParser> reasoning_tools_;  // null when tools are off
  std::unique_ptr<ToolParser> content_tools_;    // null when tools are off
  ParsedMessage message_;
  bool finished_ = false;
};

// "call_" + 24 random hex digits (vLLM's format), unique per process in practice.
std::string MakeToolCallId();

}  // namespace pagellm::parsers
