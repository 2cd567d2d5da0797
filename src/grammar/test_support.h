// Helpers for the grammar tests: a small synthetic vocabulary and string matching.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "grammar/matcher.h"
#include "grammar/token_vocab.h"

namespace pagellm::grammar::testing {

// Every single byte, plus common JSON/text pieces and a few multi-byte UTF-8 tokens;
// id 0 is EOS (special); two padding rows at the end.
inline std::unique_ptr<TokenVocab> SmallVocab() {
  std::vector<std::string> t = {"<eos>"};
  for (int b = 0; b < 256; ++b) t.push_back(std::string(1, static_cast<char>(b)));
  for (const char* s : {"{\"", "\":", "\",", "\"}", "\":\"", "true", "false", "null", "12", "345", "0.", "name",
                        "age", "  ", "\n  ", "ab", "abc", "hello", " world", "\xe4\xbd\xa0", "\xe4\xbd", "\xbd\xa0",
                        "\\n", "\\\"", "2024-", "01", "[{", "}]", "\"]", ", ", "-1", "1e", "yes", "no", "ab"}) {
    t.push_back(s);
  }
  std::vector<bool> special(t.size(), false);
  special[0] = true;
  int32_t rows = static_cast<int32_t>(t.size()) + 2;
  return TokenVocab::Build(std::move(t), std::move(special), {0}, rows);
}

inline std::shared_ptr<const CompiledGrammar> MustCompile(const Grammar& g) {
  auto c = CompileGrammar(g);
  if (!c.ok()) throw std::runtime_error(c.status().ToString());
  return *c;
}

// Whether `text` is a complete sentence of the grammar.
inline bool Matches(const std::shared_ptr<const CompiledGrammar>& g, const TokenVocab& v, const std::string& text) {
  Matcher m(g, &v);
  return m.AcceptBytes(text) && m.IsAccepting();
}

// Whether `text` is a prefix of some sentence.
inline bool IsPrefix(const std::shared_ptr<const CompiledGrammar>& g, const TokenVocab& v, const std::string& text) {
  Matcher m(g, &v);
  return m.AcceptBytes(text);
}

}  // namespace pagellm::grammar::testing
