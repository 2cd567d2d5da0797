// Building blocks of JSON grammars shared by the JSON Schema compiler and json_object:
// JSON string characters, numbers (with bounds), string formats, whitespace, and a
// recursive "any JSON value" rule.
//
//   JsonPieces p(g, JsonWhitespace{});
//   int32_t s = p.StringOf(p.Char(), 0, 10);          // "..." of at most 10 chars
//   PAGELLM_ASSIGN_OR_RETURN(int32_t n, p.Integer(0, 100));
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "grammar/grammar_ir.h"

namespace pagellm::grammar {

struct JsonWhitespace {
  // A regex for the text between JSON tokens; empty = the bounded default
  // `( |\n[ \t]{0,20})?` (unbounded whitespace lets models pad until max_tokens).
  std::string pattern;
  bool disable = false;  // no whitespace at all (vLLM's disable_any_whitespace)
};

// Numeric bounds; unset members are unbounded.
struct NumberBounds {
  std::optional<double> minimum, maximum;
  bool exclusive_minimum = false, exclusive_maximum = false;
};

class JsonPieces {
 public:
  JsonPieces(Grammar& g, const JsonWhitespace& ws);
  Status Init();

  int32_t Ws() { return g_.AddRef(ws_rule_); }
  // One JSON string character: a plain code point or an escape (no lone surrogates).
  int32_t Char() { return g_.AddRef(char_rule_); }
  // A JSON-encoded character drawn from `ranges` (code points): `"` becomes `\"` etc.
  int32_t EncodedClass(const std::vector<CodepointRange>& ranges);
  // `"` body{min,max} `"`
  int32_t StringOf(int32_t body_char, int32_t min, int32_t max);
  // Integers / numbers within bounds; digits are capped (a model cannot run away).
  StatusOr<int32_t> Integer(const NumberBounds& b);
  StatusOr<int32_t> Number(const NumberBounds& b);
  // A known `format` as the content of a string (without quotes); NotFound if unknown.
  StatusOr<int32_t> Format(std::string_view format);
  // Any JSON value (recursive).
  int32_t AnyValue() { return g_.AddRef(value_rule_); }
  // A JSON text equal to `json_text` (already serialized).
  int32_t Literal(std::string_view json_text) { return g_.AddLiteral(json_text); }

 private:
  int32_t Digits(int32_t min, int32_t max);
  int32_t NonNegRange(int64_t lo, std::optional<int64_t> hi);
  int32_t SameLength(const std::string& lo, const std::string& hi);
  int32_t IntRange(std::optional<int64_t> lo, std::optional<int64_t> hi);
  void DefineAnyValue();

  Grammar& g_;
  JsonWhitespace ws_;
  int32_t ws_rule_ = -1, char_rule_ = -1, value_rule_ = -1;
};

}  // namespace pagellm::grammar
