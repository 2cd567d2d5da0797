// Structural tags: free text in which tagged parts are constrained (vLLM's and
// XGrammar's `structural_tag` response format, and tool_choice "auto" with strict tools).
//
//   {"type": "structural_tag",
//    "structures": [{"begin": "<function=get_weather>", "schema": {...}, "end": "</function>"}],
//    "triggers": ["<function="]}
//
// The text is free until a trigger appears; from there it must continue as the `begin`
// of one of the structures that start with that trigger, then JSON valid against the
// structure's schema, then its `end`, and then it is free again. Free text never
// contains a trigger except as the start of a structure; the output may end anywhere in
// free text, never inside a structure.
//
//   PAGELLM_ASSIGN_OR_RETURN(Grammar g, StructuralTagGrammar(spec_json_text, ws));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "grammar/grammar_ir.h"
#include "grammar/json_pieces.h"

namespace pagellm::grammar {

// free (part free)*, free being text that contains none of `triggers`; each part must
// match from its first byte, which starts with one of the triggers.
int32_t AddTriggeredText(Grammar& g, std::vector<std::string> triggers, std::vector<int32_t> parts);

// `spec`: the request's JSON (its "type" key, if any, ignored): "structures" (each
// "begin", "schema", "end") and "triggers". 400-style errors name what is wrong.
StatusOr<Grammar> StructuralTagGrammar(const std::string& spec, const JsonWhitespace& ws);

}  // namespace pagellm::grammar
