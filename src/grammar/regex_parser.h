// Regular expressions (the ECMAScript/Python subset JSON Schema `pattern` and vLLM's
// `regex` use) compiled into grammar IR.
//
//   Grammar g;
//   PAGELLM_ASSIGN_OR_RETURN(int32_t e, CompileRegex(g, "[a-z]+@[a-z]+\\.com", {}));
//   g.SetRoot(g.AddRule("root", e));
//
// Supported: literals, escapes (\d \w \s \D \W \S \n \r \t \f \v \0 \xHH \uHHHH
// \u{H..}), `.`, classes with ranges and negation, groups ((...), (?:...), named),
// alternation, quantifiers * + ? {n} {n,} {n,m} (lazy/possessive suffixes accepted:
// they do not change the language). Anchors ^ and $ only at the ends of top-level
// alternatives. Refused with an error naming the construct: lookaround, backreferences,
// word boundaries, anchors elsewhere.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "grammar/grammar_ir.h"

namespace pagellm::grammar {

struct RegexOptions {
  // true: the text must contain a match (JSON Schema `pattern`): an alternative not
  // anchored with ^ (or $) gets "any text" before (after) it. false: full match.
  bool search = false;
  // Builds the expression for one character drawn from `ranges`; the default is a
  // plain class. JSON strings use it to emit `"` as `\"` and so on.
  std::function<int32_t(Grammar&, const std::vector<CodepointRange>&)> emit_class;
};

StatusOr<int32_t> CompileRegex(Grammar& g, std::string_view pattern, const RegexOptions& options);

}  // namespace pagellm::grammar
