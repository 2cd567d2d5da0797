// Tokenizer: text <-> token ids for Hugging Face byte-level BPE tokenizers (Qwen2/2.5/3,
// Qwen3.5, Llama-3, GPT-2 style), producing the same ids as HF `tokenizers` on any input.
//
//   PAGELLM_ASSIGN_OR_RETURN(auto tok, Tokenizer::FromFile("/models/Qwen3-0.6B"));
//   std::vector<int32_t> ids = tok->Encode("<|im_start|>user\nhi<|im_end|>");
//   std::string text = tok->Decode(ids, /*skip_special_tokens=*/true);
//
// Pipeline (as in HF): added tokens are cut out of the raw text; each remaining piece is
// normalized (NFC for Qwen), pre-tokenized (regex Split + ByteLevel), and each
// pre-token is BPE-encoded (cached). The post-processor is not applied: Encode never
// inserts BOS/EOS (HF's add_special_tokens=false; Qwen has none anyway).
// All const methods are thread-safe; Encode may run from many threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/json.h"
#include "common/status.h"
#include "tokenizer/added_vocabulary.h"
#include "tokenizer/bpe.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"

namespace pagellm::tokenizer {

class Tokenizer {
 public:
  // What a GGUF file provides (tokenizer.ggml.tokens / merges / token_type / pre).
  struct Components {
    std::vector<std::string> vocab;  // byte-level token strings in id order
    std::vector<std::pair<std::string, std::string>> merges;  // in rank order
    std::vector<AddedToken> added_tokens;  // ids may lie inside or after `vocab`
    std::string pre_tokenizer_pattern;     // Split regex; ByteLevel follows it
    bool nfc = true;                       // Qwen normalizes with NFC
  };

  // `path` is a tokenizer.json file or a directory that contains one.
  static StatusOr<std::unique_ptr<Tokenizer>> FromFile(const std::string& path);
  static StatusOr<std::unique_ptr<Tokenizer>> FromJson(const Json& json);
  static StatusOr<std::unique_ptr<Tokenizer>> FromComponents(Components components);

  // Invalid UTF-8 in `text` is first replaced by U+FFFD (as any UTF-8 string API would).
  // parse_special == false treats special tokens' text as ordinary text.
  std::vector<int32_t> Encode(std::string_view text, bool parse_special = true) const;
  // Unknown ids are skipped; invalid UTF-8 from partial byte tokens becomes U+FFFD.
  std::string Decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

  // Appends the raw bytes `id` contributes to Decode; `*first` tracks separators for
  // decoders that join tokens with spaces. Decode == Utf8Lossy(all appended bytes).
  void AppendTokenBytes(int32_t id, bool skip_special_tokens, bool* first, std::string* out) const;

  int32_t vocab_size() const { return vocab_size_; }  // max id + 1, added tokens included
  std::optional<int32_t> TokenToId(std::string_view token) const;
  const std::string& IdToToken(int32_t id) const;  // "" for unknown ids
  bool IsSpecial(int32_t id) const;
  const AddedVocabulary& added_vocabulary() const { return added_; }

 private:
  enum class DecoderKind { kByteLevel, kJoinWithSpace };
  Tokenizer() = default;
  Status Finish(std::vector<AddedToken> added_tokens);
  // tokenizer.json's model.vocab and model.merges read straight from the parser (tokenizer_json.cc).
  struct ModelEntries;
  static StatusOr<std::unique_ptr<Tokenizer>> FromJson(const Json& json, ModelEntries* entries);
  // `entries`, when given, holds the model's vocab and merges (absent from `model`).
  Status ParseModel(const Json& model, ModelEntries* entries);  // tokenizer_json.cc
  void EncodeText(std::string_view text, bool parse_special, std::vector<int32_t>* ids) const;

  Normalizer normalizer_;
  PreTokenizer pre_tokenizer_;
  std::unique_ptr<BpeModel> bpe_;
  AddedVocabulary added_;
  DecoderKind decoder_ = DecoderKind::kByteLevel;
  int32_t vocab_size_ = 0;
  std::vector<std::string> id_to_bytes_;  // [vocab_size] what each id decodes to
  std::vector<uint8_t> is_special_;       // [vocab_size]
};

}  // namespace pagellm::tokenizer
