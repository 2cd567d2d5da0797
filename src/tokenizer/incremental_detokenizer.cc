#include "tokenizer/incremental_detokenizer.h"

#include "tokenizer/unicode.h"

namespace pagellm::tokenizer {

// Decode() is Utf8Lossy over the concatenated token bytes, and lossy decoding restarts
// cleanly at any point not inside a completable sequence, so emitting the longest such
// prefix keeps the concatenation identical to Decode().
std::string IncrementalDetokenizer::Push(int32_t id) {
  tokenizer_.AppendTokenBytes(id, skip_special_tokens_, &first_, &pending_);
  size_t complete = CompleteUtf8PrefixLength(pending_);
  if (complete == 0) return std::string();
  std::string out = Utf8Lossy(std::string_view(pending_).substr(0, complete));
  pending_.erase(0, complete);
  return out;
}

std::string IncrementalDetokenizer::Flush() {
  std::string out = Utf8Lossy(pending_);
  pending_.clear();
  return out;
}

}  // namespace pagellm::tokenizer
