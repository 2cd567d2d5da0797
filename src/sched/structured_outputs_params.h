// StructuredOutputsParams: the constraint a request puts on its output (vLLM's
// StructuredOutputsParams; OpenAI's response_format and tool_choice map onto it).
// Plain data: the engine compiles it with grammar/ (grammar/structured_spec.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pagellm {

enum class StructuredOutputKind {
  kJson,        // `spec` is a JSON Schema (text)
  kJsonObject,  // any JSON object
  kRegex,       // `spec` is a regex, matched in full
  kChoice,      // one of `choice`, literally
  kGrammar,     // `spec` is GBNF / EBNF
  kToolCalls,   // `spec` is {"format": "hermes"|"qwen3_coder", "tools": [...], "required": bool, "mode"}
  kStructuralTag,  // `spec` is {"structures": [{"begin", "schema", "end"}], "triggers": [...]}
};

struct StructuredOutputsParams {
  StructuredOutputKind kind = StructuredOutputKind::kJson;
  std::string spec;
  std::vector<std::string> choice;
  std::string whitespace_pattern;  // between JSON tokens; empty = bounded default
  bool disable_any_whitespace = false;
  // The constraint starts after this token is sampled (Qwen3's </think> while the
  // model reasons); -1 = from the first generated token.
  int32_t start_after_token = -1;
};

}  // namespace pagellm
