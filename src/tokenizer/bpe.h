// BpeModel: byte-pair encoding of one pre-tokenized piece, bit-exact with Hugging Face
// tokenizers' BPE (same priority-queue merge order, same stale-entry rule).
//
//   BpeModel::Config config{.id_to_token = ..., .merges = {{"Ġ", "t"}, ...}, .byte_level = true};
//   PAGELLM_ASSIGN_OR_RETURN(auto bpe, BpeModel::Create(std::move(config)));
//   std::vector<int32_t> ids;
//   bpe->Encode(" hello", &ids);   // raw bytes in byte-level mode
//
// In byte-level mode the initial symbols are the vocabulary ids of the 256 byte
// characters, so the piece is never converted to the "Ġ..." form. Results of pieces up
// to 256 bytes are cached (sharded, reader/writer locked): Encode is thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/status.h"

namespace pagellm::tokenizer {

class BpeModel {
 public:
  struct Config {
    std::vector<std::string> id_to_token;  // [vocab_size]; "" marks an unused id
    std::vector<std::pair<std::string, std::string>> merges;  // in rank order
    bool byte_level = true;
    bool ignore_merges = false;  // whole piece in vocab -> that id (Llama-3 style)
    bool byte_fallback = false;  // unknown char -> <0xXX> tokens (non-byte-level only)
    std::optional<std::string> unk_token;
  };

  static StatusOr<std::unique_ptr<BpeModel>> Create(Config config);
  ~BpeModel();

  // Appends the ids of `piece` (raw UTF-8 bytes) to `ids`.
  void Encode(std::string_view piece, std::vector<int32_t>* ids) const;
  void EncodeUncached(std::string_view piece, std::vector<int32_t>* ids) const;

  int32_t vocab_size() const { return static_cast<int32_t>(id_to_token_.size()); }
  // Distinct non-empty tokens: the number of ids with a token unless a token repeats.
  size_t num_distinct_tokens() const { return token_to_id_.size(); }
  std::optional<int32_t> TokenToId(std::string_view token) const;
  const std::string& IdToToken(int32_t id) const;  // "" if unknown

 private:
  struct MergeTable;
  struct Cache;
  explicit BpeModel(Config config);
  void InitialSymbols(std::string_view piece, std::vector<int32_t>* symbols) const;
  void MergeAll(std::vector<int32_t>* symbols) const;

  // Finds by string_view without making a std::string (the same hash values as std::hash<std::string>).
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  using TokenMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

  std::vector<std::string> id_to_token_;
  TokenMap token_to_id_;
  TokenMap bytes_to_id_;  // ignore_merges, byte-level only
  int32_t byte_ids_[256];
  bool byte_level_, ignore_merges_, byte_fallback_;
  int32_t unk_id_ = -1;
  std::unique_ptr<MergeTable> merges_;
  std::unique_ptr<Cache> cache_;
};

}  // namespace pagellm::tokenizer
