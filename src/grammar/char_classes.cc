#include "grammar/char_classes.h"

#include <algorithm>

namespace pagellm::grammar {

std::vector<CodepointRange> NormalizeRanges(std::vector<CodepointRange> r) {
  std::sort(r.begin(), r.end());
  std::vector<CodepointRange> out;
  for (auto [lo, hi] : r) {
    if (!out.empty() && lo <= out.back().second + 1) {
      out.back().second = std::max(out.back().second, hi);
    } else {
      out.push_back({lo, hi});
    }
  }
  return out;
}

std::vector<CodepointRange> NegateRanges(std::vector<CodepointRange> r) {
  std::vector<CodepointRange> out;
  uint32_t next = 0;
  for (auto [lo, hi] : NormalizeRanges(std::move(r))) {
    if (lo > next) out.push_back({next, lo - 1});
    next = hi + 1;
  }
  if (next <= 0x10FFFF) out.push_back({next, 0x10FFFF});
  return out;
}

std::optional<std::vector<CodepointRange>> ShorthandClass(char c) {
  static const std::vector<CodepointRange> kDigit = {{'0', '9'}};
  static const std::vector<CodepointRange> kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
  static const std::vector<CodepointRange> kSpace = {{'\t', '\r'}, {' ', ' '}, {0xA0, 0xA0}, {0x1680, 0x1680},
                                                     {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F},
                                                     {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
  switch (c) {
    case 'd': return kDigit;
    case 'D': return NegateRanges(kDigit);
    case 'w': return kWord;
    case 'W': return NegateRanges(kWord);
    case 's': return kSpace;
    case 'S': return NegateRanges(kSpace);
    default: return std::nullopt;
  }
}

uint32_t SimpleEscape(uint32_t c) {
  switch (c) {
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    case 'f': return '\f';
    case 'v': return '\v';
    case '0': return 0;
    default: return c;
  }
}

}  // namespace pagellm::grammar
