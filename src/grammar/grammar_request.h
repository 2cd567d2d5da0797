// GrammarRequest: one structured-output constraint as the API states it, and the
// cache that compiles it (compiles are shared by every request with the same spec).
//
//   GrammarCache cache;
//   GrammarRequest r{.kind = GrammarKind::kJsonSchema, .spec = R"({"type":"integer"})"};
//   PAGELLM_ASSIGN_OR_RETURN(auto compiled, cache.Get(r));   // error => HTTP 400
//   Matcher m(compiled, vocab);
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "grammar/grammar_ir.h"
#include "grammar/json_pieces.h"
#include "grammar/matcher.h"

namespace pagellm::grammar {

enum class GrammarKind { kJsonSchema, kJsonObject, kRegex, kChoice, kGbnf, kToolCalls, kStructuralTag };

struct GrammarRequest {
  GrammarKind kind = GrammarKind::kJsonSchema;
  std::string spec;                 // schema / regex / grammar text / tool-call spec / structural tag
  std::vector<std::string> choice;  // kChoice: literal alternatives
  JsonWhitespace whitespace;
};

StatusOr<Grammar> BuildGrammar(const GrammarRequest& request);

// Tool calls in the model's own format. `spec` is JSON:
//   {"format": "hermes" | "qwen3_coder", "required": true,
//    "tools": [{"name": "...", "parameters": {JSON Schema}}, ...]}
// hermes:      <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
// qwen3_coder: <tool_call>\n<function=f>\n<parameter=p>\nvalue\n</parameter>\n</function>\n</tool_call>
// One call of one of the tools; with "required" one or more calls. With "mode": "auto"
// the text is free and only calls of the listed tools are constrained, from the call's
// opening (the <tool_call> line with the tool's name) to its end (structural_tag.h).
StatusOr<Grammar> ToolCallGrammar(const std::string& spec, const JsonWhitespace& ws);

// Thread-safe LRU of compiled grammars keyed by the whole request.
class GrammarCache {
 public:
  explicit GrammarCache(size_t capacity = 256) : capacity_(capacity) {}
  StatusOr<std::shared_ptr<const CompiledGrammar>> Get(const GrammarRequest& request);

 private:
  size_t capacity_;
  std::mutex mu_;
  std::list<std::string> lru_;  // most recent first
  struct Entry {
    std::shared_ptr<const CompiledGrammar> grammar;
    std::list<std::string>::iterator pos;
  };
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace pagellm::grammar
