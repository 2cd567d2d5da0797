// Regex: a PCRE2 (JIT, UTF + UCP) pattern that finds matches the way Hugging Face
// tokenizers' Oniguruma `find_iter` does, for the pre-tokenizer's Split.
//
//   PAGELLM_ASSIGN_OR_RETURN(auto re, Regex::Compile(R"(\p{L}+|\s+)"));
//   std::vector<Regex::Match> matches;
//   re->FindAll(text, &matches);   // text: valid UTF-8; matches: byte offsets
//
// Oniguruma and PCRE2 differ in Unicode version and in the meaning of \w and \s, so
// Compile rewrites \w/\W to Oniguruma's definition, and FindAll runs on a
// ProxyForRegex copy of the text (same offsets) when the pattern only uses ASCII and
// general-category properties. Safe to call FindAll from several threads at once.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace pagellm::tokenizer {

class Regex {
 public:
  struct Match {
    size_t begin, end;  // byte offsets, [begin, end)
  };

  static StatusOr<std::unique_ptr<Regex>> Compile(std::string_view pattern);
  // Regex matching `literal` verbatim (HF's {"String": ...} patterns).
  static StatusOr<std::unique_ptr<Regex>> CompileLiteral(std::string_view literal);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Appends all matches in order. Empty matches follow Oniguruma's find_iter: an empty
  // match right at the end of the previous match is skipped.
  void FindAll(std::string_view text, std::vector<Match>* matches) const;

 private:
  Regex(void* code, bool use_proxy) : code_(code), use_proxy_(use_proxy) {}
  void* code_;  // pcre2_code_8*
  bool use_proxy_;
};

// Rewrites Oniguruma-only syntax for PCRE2 (\w, \W, \h). Exposed for tests.
std::string TranslateOnigPattern(std::string_view pattern);

}  // namespace pagellm::tokenizer
