#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <deque>

#include <fmt/format.h>

#include "tokenizer/byte_level.h"
#include "tokenizer/unicode.h"

namespace pagellm::tokenizer {

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromComponents(Components c) {
  std::unique_ptr<Tokenizer> tok(new Tokenizer());
  if (c.nfc) tok->normalizer_ = Normalizer({Normalizer::Step()});  // default step: NFC
  PAGELLM_ASSIGN_OR_RETURN(tok->pre_tokenizer_, PreTokenizer::FromPattern(c.pre_tokenizer_pattern));
  // Added tokens that also sit in the vocab (GGUF lists every token) are not BPE
  // vocabulary: HF keeps them out of the model's vocab.
  BpeModel::Config config;
  config.id_to_token = std::move(c.vocab);
  for (const AddedToken& t : c.added_tokens)
    if (t.id >= 0 && t.id < static_cast<int32_t>(config.id_to_token.size()) && config.id_to_token[t.id] == t.content)
      config.id_to_token[t.id].clear();
  config.merges = std::move(c.merges);
  config.byte_level = true;
  PAGELLM_ASSIGN_OR_RETURN(tok->bpe_, BpeModel::Create(std::move(config)));
  PAGELLM_RETURN_IF_ERROR(tok->Finish(std::move(c.added_tokens)));
  return tok;
}

// Builds the added vocabulary and the per-id decode table once the model is set.
Status Tokenizer::Finish(std::vector<AddedToken> added_tokens) {
  std::vector<std::string> match_texts;
  for (const AddedToken& t : added_tokens) {
    if (t.id < 0) return InvalidArgumentError(fmt::format("added token \"{}\" has a negative id", t.content));
    match_texts.push_back(t.normalized ? normalizer_.Apply(Utf8Lossy(t.content)) : std::string());
  }
  vocab_size_ = bpe_->vocab_size();
  for (const AddedToken& t : added_tokens) vocab_size_ = std::max(vocab_size_, t.id + 1);
  added_ = AddedVocabulary(std::move(added_tokens), std::move(match_texts));
  id_to_bytes_.assign(vocab_size_, std::string());
  is_special_.assign(vocab_size_, 0);
  for (int32_t id = 0; id < vocab_size_; ++id) {
    const std::string& token = IdToToken(id);
    std::optional<std::string> bytes;
    if (decoder_ == DecoderKind::kByteLevel) bytes = ByteLevelDecode(token);
    id_to_bytes_[id] = bytes ? std::move(*bytes) : token;
  }
  for (const AddedToken& t : added_.tokens()) is_special_[t.id] = t.special ? 1 : 0;
  return OkStatus();
}

std::optional<int32_t> Tokenizer::TokenToId(std::string_view token) const {
  if (auto id = added_.FindByContent(token)) return id;
  return bpe_->TokenToId(token);
}

const std::string& Tokenizer::IdToToken(int32_t id) const {
  if (const AddedToken* t = added_.FindById(id)) return t->content;
  return bpe_->IdToToken(id);
}

bool Tokenizer::IsSpecial(int32_t id) const {
  return id >= 0 && id < vocab_size_ && is_special_[id] != 0;
}

// Normalizes, pre-tokenizes and BPE-encodes text that contains no non-normalized
// added token.
void Tokenizer::EncodeText(std::string_view text, bool parse_special, std::vector<int32_t>* ids) const {
  thread_local std::vector<AddedVocabulary::Segment> segments;
  thread_local std::vector<std::string_view> pieces;
  std::deque<std::string> arena;
  std::string normalized = normalizer_.empty() ? std::string() : normalizer_.Apply(text);
  std::string_view norm = normalizer_.empty() ? text : std::string_view(normalized);
  size_t first_segment = segments.size();
  added_.Split(norm, /*normalized_tokens=*/true, parse_special, &segments);
  for (size_t s = first_segment; s < segments.size(); ++s) {
    const auto seg = segments[s];
    if (seg.id >= 0) { ids->push_back(seg.id); continue; }
    pre_tokenizer_.Split(norm.substr(seg.begin, seg.end - seg.begin), &pieces, &arena);
    for (std::string_view piece : pieces) bpe_->Encode(piece, ids);
  }
  segments.resize(first_segment);
}

std::vector<int32_t> Tokenizer::Encode(std::string_view text, bool parse_special) const {
  std::string clean;
  if (!IsValidUtf8(text)) {
    clean = Utf8Lossy(text);
    text = clean;
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  std::vector<AddedVocabulary::Segment> segments;
  added_.Split(text, /*normalized_tokens=*/false, parse_special, &segments);
  for (const auto& seg : segments) {
    if (seg.id >= 0) ids.push_back(seg.id);
    else EncodeText(text.substr(seg.begin, seg.end - seg.begin), parse_special, &ids);
  }
  return ids;
}

void Tokenizer::AppendTokenBytes(int32_t id, bool skip_special_tokens, bool* first, std::string* out) const {
  if (id < 0 || id >= vocab_size_) return;
  if (skip_special_tokens && is_special_[id]) return;
  if (decoder_ == DecoderKind::kByteLevel) {
    out->append(id_to_bytes_[id]);
    return;
  }
  const std::string& token = IdToToken(id);
  if (token.empty() && added_.FindById(id) == nullptr && bpe_->IdToToken(id).empty()) return;
  if (!*first) out->push_back(' ');
  out->append(token);
  *first = false;
}

std::string Tokenizer::Decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::string bytes;
  bool first = true;
  for (int32_t id : ids) AppendTokenBytes(id, skip_special_tokens, &first, &bytes);
  return Utf8Lossy(bytes);
}

}  // namespace pagellm::tokenizer
