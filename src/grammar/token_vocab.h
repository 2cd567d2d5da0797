// TokenVocab: the vocabulary as byte strings, arranged for computing token masks.
//
//   auto vocab = TokenVocab::FromTokenizer(tok, /*eos=*/{151645}, /*num_rows=*/151936);
//   std::vector<uint32_t> mask(vocab->num_words());   // bit i = token i allowed
//
// Tokens are sorted by their bytes into a flat trie in depth-first order; each node
// knows where its subtree ends, so a mask walk skips a whole subtree as soon as its
// prefix is rejected (the llguidance layout). "Text" tokens (complete UTF-8, no `"`,
// `\` or control characters) also get a trie of their own complement: in a state
// where every text character loops back (the body of a JSON string) all text tokens
// are allowed at once and only the rest is walked. In the body of a bounded string
// (`maxLength`), where the next n characters are free and then text ends, the text
// tokens of at most n characters are allowed at once (ShortTextTokens) and only the
// longer ones and the rest are walked.
// Special tokens are never matched by bytes; the end-of-sequence ids are allowed by
// the matcher exactly where the grammar accepts. Rows in [tokenizer size, num_rows)
// are padding and always masked. Immutable after construction: share it freely.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace pagellm::tokenizer {
class Tokenizer;
}

namespace pagellm::grammar {

struct TrieNode {
  uint32_t skip;   // index just past this node's subtree
  int32_t token;   // token ending here, or -1
  uint16_t depth;  // 1 for a first byte; the root (index 0) has depth 0
  uint8_t byte;
};

struct TokenTrie {
  std::vector<TrieNode> nodes;                    // [0] is the root
  std::vector<std::pair<int32_t, int32_t>> dups;  // (token in the trie, token with equal bytes)
  int32_t max_depth = 0;
};

class TokenVocab {
 public:
  // token_bytes[i] is what id i decodes to; empty means never allowed by bytes.
  // special[i] marks ids that are not matched by their bytes.
  static std::unique_ptr<TokenVocab> Build(std::vector<std::string> token_bytes, std::vector<bool> special,
                                           std::vector<int32_t> eos_ids, int32_t num_rows);
  static std::unique_ptr<TokenVocab> FromTokenizer(const tokenizer::Tokenizer& tok, std::span<const int32_t> eos_ids,
                                                   int32_t num_rows);

  int32_t num_rows() const { return num_rows_; }
  int32_t num_tokens() const { return static_cast<int32_t>(token_bytes_.size()); }  // tokenizer ids
  int32_t num_words() const { return (num_rows_ + 31) / 32; }
  const std::string& bytes(int32_t id) const { return token_bytes_[id]; }
  bool is_special(int32_t id) const { return id < 0 || id >= num_tokens() || special_[id]; }
  bool is_eos(int32_t id) const;
  std::span<const int32_t> eos_ids() const { return eos_ids_; }
  const TokenTrie& all() const { return all_; }
  const TokenTrie& non_text() const { return non_text_; }
  std::span<const uint32_t> text_mask() const { return text_mask_; }
  // Text tokens by length in characters (code points): `words` (num_words()) set to those
  // of at most `chars` <= kShortTextChars; the trie of the longer ones (< 1 % of Qwen's).
  static constexpr int32_t kShortTextChars = 16;
  void ShortTextTokens(int32_t chars, std::span<uint32_t> words) const;
  const TokenTrie& long_text() const { return long_text_; }

 private:
  std::vector<std::string> token_bytes_;
  std::vector<bool> special_;
  std::vector<int32_t> eos_ids_;
  int32_t num_rows_ = 0;
  TokenTrie all_, non_text_;
  std::vector<uint32_t> text_mask_;  // [num_words]
  std::vector<std::vector<uint32_t>> text_upto_;  // [n]: text tokens of at most n characters
  TokenTrie long_text_;
};

// Whether `bytes` is complete UTF-8 with no `"`, `\`, C0 control or DEL.
bool IsTextToken(const std::string& bytes);

}  // namespace pagellm::grammar
