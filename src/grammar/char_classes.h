// Code point range helpers shared by the regex and GBNF parsers.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "grammar/grammar_ir.h"

namespace pagellm::grammar {

std::vector<CodepointRange> NormalizeRanges(std::vector<CodepointRange> ranges);
std::vector<CodepointRange> NegateRanges(std::vector<CodepointRange> ranges);
// \d \w \s and their negations (ASCII digits and word chars; ECMAScript white space).
std::optional<std::vector<CodepointRange>> ShorthandClass(char c);
// n r t f v 0 -> the control char; anything else stands for itself.
uint32_t SimpleEscape(uint32_t c);

}  // namespace pagellm::grammar
