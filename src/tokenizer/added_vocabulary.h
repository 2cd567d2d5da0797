// AddedVocabulary: the tokenizer.json "added_tokens" (special tokens such as
// <|im_start|> and plain added tokens such as <think>), found in the text before any
// normalization or BPE, as Hugging Face's AddedVocabulary does: leftmost-longest
// matching, honouring single_word, lstrip, rstrip, normalized and special.
//
//   AddedVocabulary added(tokens);
//   std::vector<AddedVocabulary::Segment> segments;
//   added.Split(text, /*normalized_tokens=*/false, /*parse_special=*/true, &segments);
//   // segments cover text: {begin, end, id}; id == -1 for ordinary text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace pagellm::tokenizer {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
  bool special = false;
};

class AddedVocabulary {
 public:
  struct Segment {
    size_t begin, end;  // byte offsets into the split text
    int32_t id;         // added token id, or -1 for text between tokens
  };

  AddedVocabulary() = default;
  // `match_texts[i]` is what tokens[i] is matched as: its content, or for normalized
  // tokens its content after the tokenizer's normalizer (empty = same as content).
  explicit AddedVocabulary(std::vector<AddedToken> tokens, std::vector<std::string> match_texts = {});

  // Splits `text` by the tokens whose `normalized` flag equals `normalized_tokens`.
  // With parse_special == false, special tokens are not matched (HF's
  // encode_special_tokens). Segments cover `text` in order; empty text gives none.
  void Split(std::string_view text, bool normalized_tokens, bool parse_special,
             std::vector<Segment>* segments) const;

  bool empty() const { return tokens_.empty(); }
  const std::vector<AddedToken>& tokens() const { return tokens_; }
  const AddedToken* FindById(int32_t id) const;
  std::optional<int32_t> FindByContent(std::string_view content) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> children;
    int32_t token_idx = -1;
  };
  struct Trie {
    std::vector<Node> nodes{1};
    bool first_byte[256] = {};
  };
  void Insert(Trie* trie, std::string_view key, int32_t token_idx);
  // Longest token starting at text[begin]: token index and end, or -1.
  int32_t LongestAt(const Trie& trie, std::string_view text, size_t begin, size_t* end) const;

  std::vector<AddedToken> tokens_;
  Trie tries_[2];  // [normalized]
  std::unordered_map<int32_t, size_t> by_id_;
  std::unordered_map<std::string, int32_t> by_content_;
};

}  // namespace pagellm::tokenizer
