// Lexer for the Jinja subset used by Hugging Face chat templates.
//
// Splits a template into text and tag tokens, applying whitespace control the way
// transformers configures Jinja (trim_blocks=True, lstrip_blocks=True,
// keep_trailing_newline=False): `{%-`/`-%}` strip all adjacent whitespace, a block or
// comment tag removes the first newline after it, and spaces/tabs before a block tag
// at the start of a line are removed. `{% raw %}` bodies become one text token.
//
//   PAGELLM_ASSIGN_OR_RETURN(std::vector<Token> tokens, Lex("Hi {{ name }}!", {}));
//   // kText "Hi ", kVarBegin, kName "name", kVarEnd, kText "!", kEof
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace pagellm::chat {

enum class TokenKind {
  kText,        // literal template text, whitespace control already applied
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,        // identifier or keyword (if, for, in, not, ...)
  kString,      // string literal, escapes decoded
  kInt,
  kFloat,
  kOperator,    // + - * / // % ** ~ == != < <= > >= = ( ) [ ] { } . , : |
  kEof,
};

struct Token {
  TokenKind kind;
  std::string text;  // decoded value for kString, spelling otherwise
  int line;          // 1-based line of the token's first character
};

struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

// Errors name the line: "line 3: unterminated string literal".
StatusOr<std::vector<Token>> Lex(std::string_view source, const LexOptions& options);

const char* TokenKindName(TokenKind kind);

}  // namespace pagellm::chat
