#include "tokenizer/added_vocabulary.h"

#include <algorithm>

#include "tokenizer/unicode.h"

namespace pagellm::tokenizer {
namespace {

char32_t LastChar(std::string_view s) {
  size_t start = s.size() - 1;
  while (start > 0 && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) --start;
  return DecodeUtf8(s, &start);
}

// HF's space_leftmost_at_end: start of the trailing run of whitespace.
size_t TrailingSpaceStart(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) --start;
    size_t pos = start;
    if (!IsUnicodeSpace(DecodeUtf8(s, &pos))) break;
    end = start;
  }
  return end;
}

// HF's space_rightmost_at_start: length of the leading run of whitespace.
size_t LeadingSpaceLength(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    size_t next = pos;
    if (!IsUnicodeSpace(DecodeUtf8(s, &next))) break;
    pos = next;
  }
  return pos;
}

}  // namespace

AddedVocabulary::AddedVocabulary(std::vector<AddedToken> tokens, std::vector<std::string> match_texts)
    : tokens_(std::move(tokens)) {
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const AddedToken& t = tokens_[i];
    by_id_[t.id] = i;
    by_content_[t.content] = t.id;
    std::string_view key = i < match_texts.size() && !match_texts[i].empty() ? match_texts[i] : t.content;
    if (!key.empty()) Insert(&tries_[t.normalized ? 1 : 0], key, static_cast<int32_t>(i));
  }
}

void AddedVocabulary::Insert(Trie* trie, std::string_view key, int32_t token_idx) {
  trie->first_byte[static_cast<uint8_t>(key[0])] = true;
  int32_t node = 0;
  for (char c : key) {
    uint8_t b = static_cast<uint8_t>(c);
    auto& children = trie->nodes[node].children;
    auto it = std::find_if(children.begin(), children.end(), [b](const auto& p) { return p.first == b; });
    if (it != children.end()) {
      node = it->second;
    } else {
      int32_t child = static_cast<int32_t>(trie->nodes.size());
      children.push_back({b, child});
      trie->nodes.emplace_back();
      node = child;
    }
  }
  trie->nodes[node].token_idx = token_idx;  // a later duplicate wins
}

int32_t AddedVocabulary::LongestAt(const Trie& trie, std::string_view text, size_t begin, size_t* end) const {
  int32_t node = 0, best = -1;
  for (size_t j = begin; j < text.size(); ++j) {
    uint8_t b = static_cast<uint8_t>(text[j]);
    const auto& children = trie.nodes[node].children;
    auto it = std::find_if(children.begin(), children.end(), [b](const auto& p) { return p.first == b; });
    if (it == children.end()) break;
    node = it->second;
    if (trie.nodes[node].token_idx >= 0) {
      best = trie.nodes[node].token_idx;
      *end = j + 1;
    }
  }
  return best;
}

void AddedVocabulary::Split(std::string_view text, bool normalized_tokens, bool parse_special,
                            std::vector<Segment>* segments) const {
  if (text.empty()) return;
  const Trie& trie = tries_[normalized_tokens ? 1 : 0];
  size_t start_offset = 0;
  for (size_t i = 0; i < text.size();) {
    size_t stop = 0;
    int32_t idx = trie.first_byte[static_cast<uint8_t>(text[i])] ? LongestAt(trie, text, i, &stop) : -1;
    if (idx < 0) { ++i; continue; }
    size_t start = i;
    i = stop;  // like Aho-Corasick's iterator, resume after the match even if it is dropped
    const AddedToken& t = tokens_[idx];
    if (!parse_special && t.special) continue;
    if (t.single_word) {
      bool start_space = start == 0 || !IsWordChar(LastChar(text.substr(0, start)));
      size_t p = stop;
      bool stop_space = stop == text.size() || !IsWordChar(DecodeUtf8(text, &p));
      if (!start_space || !stop_space) continue;
    }
    if (t.lstrip) start = std::max(TrailingSpaceStart(text.substr(0, start)), start_offset);
    if (t.rstrip) stop += LeadingSpaceLength(text.substr(stop));
    if (start_offset < start) segments->push_back({start_offset, start, -1});
    segments->push_back({start, stop, t.id});
    start_offset = stop;
  }
  if (start_offset != text.size()) segments->push_back({start_offset, text.size(), -1});
}

const AddedToken* AddedVocabulary::FindById(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

std::optional<int32_t> AddedVocabulary::FindByContent(std::string_view content) const {
  auto it = by_content_.find(std::string(content));
  if (it == by_content_.end()) return std::nullopt;
  return it->second;
}

}  // namespace pagellm::tokenizer
