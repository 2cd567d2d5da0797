// PreTokenizer: the `pre_tokenizer` stage of a Hugging Face tokenizer.json. Splits
// normalized text into pieces that BPE then encodes independently.
//
//   PAGELLM_ASSIGN_OR_RETURN(auto pre, PreTokenizer::FromJson(json["pre_tokenizer"]));
//   std::vector<std::string_view> pieces;
//   std::deque<std::string> arena;       // owns pieces that are not slices of `text`
//   pre->Split(text, &pieces, &arena);
//
// Supported: Split (Regex or String pattern; Isolated, Removed, MergedWithPrevious,
// MergedWithNext, Contiguous; invert), ByteLevel (add_prefix_space, use_regex with the
// GPT-2 pattern) and Sequence. ByteLevel's byte-to-char mapping is not applied here:
// BPE works on raw bytes directly (see bpe.h), which is equivalent and cheaper.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/json.h"
#include "common/status.h"
#include "tokenizer/regex.h"

namespace pagellm::tokenizer {

enum class SplitBehavior { kIsolated, kRemoved, kMergedWithPrevious, kMergedWithNext, kContiguous };

// The GPT-2 pattern ByteLevel uses when use_regex is true.
inline constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class PreTokenizer {
 public:
  struct Step {
    enum class Kind { kSplit, kByteLevel } kind = Kind::kSplit;
    std::unique_ptr<Regex> regex;  // kSplit, or kByteLevel with use_regex
    SplitBehavior behavior = SplitBehavior::kIsolated;
    bool invert = false;
    bool add_prefix_space = false;  // kByteLevel
  };

  PreTokenizer() = default;
  static StatusOr<PreTokenizer> FromJson(const Json& json);
  // Split(pattern, Isolated) followed by ByteLevel(add_prefix_space=false,
  // use_regex=false): the Qwen/Llama-3 layout, used when building from GGUF metadata.
  static StatusOr<PreTokenizer> FromPattern(std::string_view pattern);

  void AddStep(Step step) { steps_.push_back(std::move(step)); }
  bool has_byte_level() const;

  void Split(std::string_view text, std::vector<std::string_view>* pieces,
             std::deque<std::string>* arena) const;

 private:
  std::vector<Step> steps_;
};

// One HF `NormalizedString::split`: cuts `text` by the matches of `regex` according to
// `behavior` and appends the non-empty pieces. Exposed for tests.
void SplitByRegex(std::string_view text, const Regex& regex, SplitBehavior behavior, bool invert,
                  std::vector<std::string_view>* pieces);

}  // namespace pagellm::tokenizer
