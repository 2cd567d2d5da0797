// Text-scanning helpers shared by the streaming parsers: finding the earliest of
// several tags, and computing how much of a buffer can be released without cutting
// a tag that may still be completing in the next delta.
//
//   std::string buf = "hello <tool_ca";
//   size_t safe = SafePrefixLen(buf, {"<tool_call>"});   // 6: "hello " is safe,
//                                                         // "<tool_ca" is held back
//   TagMatch m = FindFirstTag("a</think>b", {"<think>", "</think>"});  // {1, 1}
//
// All tags are ASCII, so a held-back suffix always starts on an ASCII byte and the
// released prefix never ends inside a multi-byte UTF-8 sequence that was whole in
// the input.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>

namespace pagellm::parsers {

struct TagMatch {
  size_t pos = std::string_view::npos;  // byte offset of the tag, npos if none
  int tag_idx = -1;                     // index into the tag list
  bool found() const { return pos != std::string_view::npos; }
};

// Earliest occurrence of any tag; on a tie the earlier tag in the list wins.
TagMatch FindFirstTag(std::string_view text, std::initializer_list<std::string_view> tags);

// Length of the longest suffix of `text` that is a proper prefix of `tag`.
size_t PartialTagSuffixLen(std::string_view text, std::string_view tag);

// text.size() minus the longest partial-tag suffix over `tags`: the bytes that can
// be released now because no tag can start inside them.
size_t SafePrefixLen(std::string_view text, std::initializer_list<std::string_view> tags);

bool IsJsonSpace(char c);
std::string_view TrimSpace(std::string_view s);
// Index of the first non-whitespace byte, or s.size().
size_t SkipSpace(std::string_view s, size_t pos = 0);

}  // namespace pagellm::parsers
