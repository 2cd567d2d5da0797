// Python str semantics over UTF-8 std::string: code-point indexing, strip/split with
// Python's whitespace rules, and the case helpers Jinja filters need.
//
//   PyStrip("  hi\n", std::nullopt, true, true);   // "hi"
//   PySplit("a,b,,c", ",", -1);                     // {"a", "b", "", "c"}
//   Utf8Slice("héllo", 1, 3);                       // code points [1, 3): "él"
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pagellm::chat {

// Byte offsets of each code point start, plus s.size() at the end.
std::vector<size_t> Utf8Offsets(std::string_view s);
size_t Utf8Length(std::string_view s);

// str.strip/lstrip/rstrip: `chars` nullopt means Python whitespace.
std::string PyStrip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
// str.split(sep, maxsplit); sep nullopt splits on whitespace runs.
std::vector<std::string> PySplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
// str.replace(old, new, count); count < 0 replaces all.
std::string PyReplace(std::string_view s, std::string_view old_text, std::string_view new_text, int64_t count);

std::string AsciiUpper(std::string_view s);
std::string AsciiLower(std::string_view s);
// str.capitalize(): first character upper, the rest lower.
std::string PyCapitalize(std::string_view s);
// Jinja's |title: words split at whitespace and -([{< are capitalized.
std::string JinjaTitle(std::string_view s);
// str.title(): a letter after a non-letter is upper, others lower.
std::string PyTitle(std::string_view s);

}  // namespace pagellm::chat
