#include "grammar/token_vocab.h"

#include <algorithm>
#include <numeric>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace pagellm::grammar {
namespace {

TokenTrie BuildTrie(const std::vector<std::string>& bytes, std::vector<int32_t> ids) {
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return bytes[a] < bytes[b]; });
  TokenTrie trie;
  trie.nodes.push_back({0, -1, 0, 0});
  std::vector<uint32_t> path = {0};  // node index per depth
  const std::string* prev = nullptr;
  for (int32_t id : ids) {
    const std::string& b = bytes[id];
    if (prev && *prev == b) {
      trie.dups.push_back({trie.nodes[path.back()].token, id});
      continue;
    }
    size_t lcp = 0;
    if (prev) {
      while (lcp < prev->size() && lcp < b.size() && (*prev)[lcp] == b[lcp]) ++lcp;
    }
    while (path.size() > lcp + 1) {  // close subtrees that do not share the prefix
      trie.nodes[path.back()].skip = static_cast<uint32_t>(trie.nodes.size());
      path.pop_back();
    }
    for (size_t d = lcp; d < b.size(); ++d) {
      path.push_back(static_cast<uint32_t>(trie.nodes.size()));
      trie.nodes.push_back({0, -1, static_cast<uint16_t>(d + 1), static_cast<uint8_t>(b[d])});
    }
    trie.nodes[path.back()].token = id;
    trie.max_depth = std::max<int32_t>(trie.max_depth, static_cast<int32_t>(b.size()));
    prev = &b;
  }
  while (!path.empty()) {
    trie.nodes[path.back()].skip = static_cast<uint32_t>(trie.nodes.size());
    path.pop_back();
  }
  return trie;
}

}  // namespace

bool IsTextToken(const std::string& s) {
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7F || c == '"' || c == '\\') return false;
  }
  return !s.empty() && tokenizer::IsValidUtf8(s);
}

std::unique_ptr<TokenVocab> TokenVocab::Build(std::vector<std::string> token_bytes, std::vector<bool> special,
                                              std::vector<int32_t> eos_ids, int32_t num_rows) {
  auto v = std::make_unique<TokenVocab>();
  v->num_rows_ = std::max<int32_t>(num_rows, static_cast<int32_t>(token_bytes.size()));
  special.resize(token_bytes.size(), false);
  std::vector<int32_t> all, non_text, long_text;
  v->text_mask_.assign(v->num_words(), 0);
  v->text_upto_.assign(kShortTextChars + 1, std::vector<uint32_t>(v->num_words(), 0));
  for (int32_t id = 0; id < static_cast<int32_t>(token_bytes.size()); ++id) {
    if (special[id] || token_bytes[id].empty()) continue;
    all.push_back(id);
    if (IsTextToken(token_bytes[id])) {
      v->text_mask_[id >> 5] |= 1u << (id & 31);
      // Code points: every byte that is not a continuation byte starts one.
      const int32_t chars = static_cast<int32_t>(std::count_if(token_bytes[id].begin(), token_bytes[id].end(),
                                                               [](char c) { return (c & 0xC0) != 0x80; }));
      if (chars > kShortTextChars) long_text.push_back(id);
      else v->text_upto_[chars][id >> 5] |= 1u << (id & 31);
    } else {
      non_text.push_back(id);
    }
  }
  for (int32_t n = 1; n <= kShortTextChars; ++n) {  // exactly n characters -> at most n
    for (int32_t w = 0; w < v->num_words(); ++w) v->text_upto_[n][w] |= v->text_upto_[n - 1][w];
  }
  v->all_ = BuildTrie(token_bytes, all);
  v->non_text_ = BuildTrie(token_bytes, non_text);
  v->long_text_ = BuildTrie(token_bytes, long_text);
  v->token_bytes_ = std::move(token_bytes);
  v->special_ = std::move(special);
  v->eos_ids_ = std::move(eos_ids);
  return v;
}

std::unique_ptr<TokenVocab> TokenVocab::FromTokenizer(const tokenizer::Tokenizer& tok, std::span<const int32_t> eos_ids,
                                                      int32_t num_rows) {
  int32_t n = tok.vocab_size();
  std::vector<std::string> bytes(n);
  std::vector<bool> special(n, false);
  for (int32_t id = 0; id < n; ++id) {
    bool first = true;
    special[id] = tok.IsSpecial(id);
    tok.AppendTokenBytes(id, /*skip_special_tokens=*/false, &first, &bytes[id]);
  }
  for (int32_t e : eos_ids) {
    if (e >= 0 && e < n) special[e] = true;
  }
  return Build(std::move(bytes), std::move(special), std::vector<int32_t>(eos_ids.begin(), eos_ids.end()), num_rows);
}

bool TokenVocab::is_eos(int32_t id) const {
  return std::find(eos_ids_.begin(), eos_ids_.end(), id) != eos_ids_.end();
}

void TokenVocab::ShortTextTokens(int32_t chars, std::span<uint32_t> words) const {
  const std::vector<uint32_t>& mask = text_upto_[std::clamp(chars, 0, kShortTextChars)];
  std::copy(mask.begin(), mask.end(), words.begin());
}

}  // namespace pagellm::grammar
