#include "chat/text_util.h"

#include <cctype>

namespace pagellm::chat {
namespace {

uint32_t DecodeAt(std::string_view s, size_t begin, size_t end) {
  unsigned char c = s[begin];
  size_t len = end - begin;
  if (len == 1) return c;
  uint32_t cp = c & (0x7F >> len);
  for (size_t i = begin + 1; i < end; ++i) cp = (cp << 6) | (s[i] & 0x3F);
  return cp;
}

// Python's str.isspace() set.
bool IsPySpace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

bool IsAlpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) || (static_cast<unsigned char>(c) >= 0x80); }

}  // namespace

std::vector<size_t> Utf8Offsets(std::string_view s) {
  std::vector<size_t> offsets;
  offsets.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) offsets.push_back(i);
  }
  offsets.push_back(s.size());
  return offsets;
}

size_t Utf8Length(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::string PyStrip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
  std::vector<size_t> off = Utf8Offsets(s);
  size_t n = off.size() - 1;
  std::vector<size_t> char_off;
  if (chars) char_off = Utf8Offsets(*chars);
  auto strip_here = [&](size_t i) {
    std::string_view ch = s.substr(off[i], off[i + 1] - off[i]);
    if (!chars) return IsPySpace(DecodeAt(s, off[i], off[i + 1]));
    for (size_t k = 0; k + 1 < char_off.size(); ++k) {
      if (std::string_view(*chars).substr(char_off[k], char_off[k + 1] - char_off[k]) == ch) return true;
    }
    return false;
  };
  size_t begin = 0, end = n;
  if (left) {
    while (begin < end && strip_here(begin)) ++begin;
  }
  if (right) {
    while (end > begin && strip_here(end - 1)) --end;
  }
  return std::string(s.substr(off[begin], off[end] - off[begin]));
}

std::vector<std::string> PySplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    size_t start = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      size_t hit = s.find(*sep, start);
      if (hit == std::string_view::npos) break;
      out.emplace_back(s.substr(start, hit - start));
      start = hit + sep->size();
    }
    out.emplace_back(s.substr(start));
    return out;
  }
  std::vector<size_t> off = Utf8Offsets(s);
  size_t n = off.size() - 1, i = 0;
  auto space = [&](size_t k) { return IsPySpace(DecodeAt(s, off[k], off[k + 1])); };
  while (true) {
    while (i < n && space(i)) ++i;
    if (i >= n) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
      size_t end = n;
      while (end > i && space(end - 1)) --end;
      out.emplace_back(s.substr(off[i], off[end] - off[i]));
      break;
    }
    size_t j = i;
    while (j < n && !space(j)) ++j;
    out.emplace_back(s.substr(off[i], off[j] - off[i]));
    i = j;
  }
  return out;
}

std::string PyReplace(std::string_view s, std::string_view old_text, std::string_view new_text, int64_t count) {
  std::string out;
  if (old_text.empty()) {
    // Python inserts `new` between every code point (and at both ends).
    std::vector<size_t> off = Utf8Offsets(s);
    int64_t done = 0;
    for (size_t i = 0; i + 1 < off.size() + 1; ++i) {
      if (count < 0 || done < count) {
        out += new_text;
        ++done;
      }
      if (i + 1 < off.size()) out += s.substr(off[i], off[i + 1] - off[i]);
    }
    return out;
  }
  size_t start = 0;
  for (int64_t done = 0; count < 0 || done < count; ++done) {
    size_t hit = s.find(old_text, start);
    if (hit == std::string_view::npos) break;
    out += s.substr(start, hit - start);
    out += new_text;
    start = hit + old_text.size();
  }
  out += s.substr(start);
  return out;
}

std::string AsciiUpper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string PyCapitalize(std::string_view s) {
  std::string out = AsciiLower(s);
  if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}

std::string JinjaTitle(std::string_view s) {
  std::string out;
  bool word_start = true;
  for (char c : s) {
    bool boundary = std::isspace(static_cast<unsigned char>(c)) || c == '-' || c == '(' || c == '{' || c == '[' ||
                    c == '<';
    if (boundary) {
      out += c;
      word_start = true;
    } else {
      out += static_cast<char>(word_start ? std::toupper(static_cast<unsigned char>(c))
                                          : std::tolower(static_cast<unsigned char>(c)));
      word_start = false;
    }
  }
  return out;
}

std::string PyTitle(std::string_view s) {
  std::string out;
  bool prev_alpha = false;
  for (char c : s) {
    bool alpha = IsAlpha(c);
    out += static_cast<char>(alpha && !prev_alpha ? std::toupper(static_cast<unsigned char>(c))
                                                  : std::tolower(static_cast<unsigned char>(c)));
    prev_alpha = alpha;
  }
  return out;
}

}  // namespace pagellm::chat
