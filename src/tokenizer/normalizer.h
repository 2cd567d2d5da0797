// Normalizer: the `normalizer` stage of a Hugging Face tokenizer.json, applied to each
// piece of text between added tokens before pre-tokenization.
//
//   PAGELLM_ASSIGN_OR_RETURN(auto normalizer, Normalizer::FromJson(json["normalizer"]));
//   std::string normalized = normalizer.Apply(piece);
//
// Supported: null, NFC, NFD, NFKC, NFKD, Lowercase, Prepend, Strip, Replace (String
// pattern) and Sequence of those. Unicode normalization reproduces HF exactly, including
// HF's older Unicode data: code points HF does not know are left alone (see
// IsHfNormalizationInert) instead of being reordered or composed as utf8proc would.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/json.h"
#include "common/status.h"

namespace pagellm::tokenizer {

enum class NormalizationForm { kNFC, kNFD, kNFKC, kNFKD };

// HF-compatible Unicode normalization of valid UTF-8.
std::string UnicodeNormalize(std::string_view text, NormalizationForm form);

class Normalizer {
 public:
  struct Step {
    enum class Kind { kUnicode, kLowercase, kPrepend, kStrip, kReplace } kind = Kind::kUnicode;
    NormalizationForm form = NormalizationForm::kNFC;
    std::string a, b;  // Prepend: a; Replace: a -> b
    bool strip_left = false, strip_right = false;
  };

  Normalizer() = default;  // identity
  explicit Normalizer(std::vector<Step> steps) : steps_(std::move(steps)) {}
  // `json` is the tokenizer.json "normalizer" value (may be null).
  static StatusOr<Normalizer> FromJson(const Json& json);

  bool empty() const { return steps_.empty(); }
  std::string Apply(std::string_view text) const;

 private:
  std::vector<Step> steps_;
};

}  // namespace pagellm::tokenizer
