// GBNF (llama.cpp's grammar syntax, accepted as is) and the EBNF superset xgrammar and
// vLLM document, compiled into grammar IR.
//
//   PAGELLM_ASSIGN_OR_RETURN(Grammar g, ParseGbnf(R"(root ::= "yes" | "no")"));
//
// Rules are `name ::= alternatives`; terminals are "strings", [classes] (with ^ and
// ranges), `.`; grouping ( ); quantifiers * + ? {m} {m,} {m,n}; `#` comments. A rule may
// span lines: it ends where the next `name ::=` begins. The start rule is `root`.
#pragma once

#include <string_view>

#include "common/status.h"
#include "grammar/grammar_ir.h"

namespace pagellm::grammar {

StatusOr<Grammar> ParseGbnf(std::string_view text, std::string_view root_name = "root");

}  // namespace pagellm::grammar
