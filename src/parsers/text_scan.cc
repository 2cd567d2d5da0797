#include "parsers/text_scan.h"

#include <algorithm>

namespace pagellm::parsers {

TagMatch FindFirstTag(std::string_view text, std::initializer_list<std::string_view> tags) {
  TagMatch best;
  int idx = 0;
  for (std::string_view tag : tags) {
    size_t pos = text.find(tag);
    if (pos != std::string_view::npos && (!best.found() || pos < best.pos)) {
      best.pos = pos;
      best.tag_idx = idx;
    }
    ++idx;
  }
  return best;
}

size_t PartialTagSuffixLen(std::string_view text, std::string_view tag) {
  size_t max_len = std::min(text.size(), tag.size() - 1);
  for (size_t len = max_len; len > 0; --len) {
    if (text.substr(text.size() - len) == tag.substr(0, len)) return len;
  }
  return 0;
}

size_t SafePrefixLen(std::string_view text, std::initializer_list<std::string_view> tags) {
  size_t hold = 0;
  for (std::string_view tag : tags) hold = std::max(hold, PartialTagSuffixLen(text, tag));
  return text.size() - hold;
}

bool IsJsonSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::string_view TrimSpace(std::string_view s) {
  size_t begin = SkipSpace(s);
  size_t end = s.size();
  while (end > begin && IsJsonSpace(s[end - 1])) --end;
  return s.substr(begin, end - begin);
}

size_t SkipSpace(std::string_view s, size_t pos) {
  while (pos < s.size() && IsJsonSpace(s[pos])) ++pos;
  return pos;
}

}  // namespace pagellm::parsers
