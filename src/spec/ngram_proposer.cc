#include "spec/ngram_proposer.h"

#include <algorithm>

namespace pagellm {

std::vector<int32_t> NgramProposer::Propose(std::span<const int32_t> tokens, int32_t max_tokens) const {
  const int32_t k = max_tokens < 0 ? config_.num_speculative_tokens : std::min(max_tokens, config_.num_speculative_tokens);
  const int64_t len = static_cast<int64_t>(tokens.size());
  if (k <= 0) return {};
  for (int32_t n = config_.max_n; n >= config_.min_n; --n) {
    if (n >= len) continue;
    const std::span<const int32_t> suffix = tokens.subspan(static_cast<size_t>(len - n));
    // Occurrences start at s < len - n (the suffix itself excluded), latest first.
    for (int64_t s = len - n - 1; s >= 0; --s) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + s)) continue;
      // The continuation of the occurrence; where it runs into the end of `tokens` it
      // goes on with the draft itself (a period of len - from tokens repeats), so a
      // repeating run gets k drafts, not only as many as fit before the end.
      const int64_t from = s + n;
      std::vector<int32_t> drafts;
      drafts.reserve(static_cast<size_t>(k));
      for (int64_t i = 0; i < k; ++i) {
        drafts.push_back(from + i < len ? tokens[static_cast<size_t>(from + i)] : drafts[static_cast<size_t>(from + i - len)]);
      }
      return drafts;
    }
  }
  return {};
}

}  // namespace pagellm
