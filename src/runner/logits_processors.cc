#include "runner/logits_processors.h"

#include <algorithm>
#include <limits>

#include "common/status.h"

namespace pagellm {

void ApplyTokenMask(std::span<float> row, std::span<const uint32_t> words) {
  const float kNegInf = -std::numeric_limits<float>::infinity();
  const size_t n = row.size();
  for (size_t w = 0; w < words.size() && w * 32 < n; ++w) {
    const uint32_t bits = words[w];
    if (bits == 0xFFFFFFFFu) continue;
    const size_t end = std::min(n, w * 32 + 32);
    for (size_t i = w * 32; i < end; ++i) {
      if (!((bits >> (i & 31)) & 1u)) row[i] = kNegInf;
    }
  }
  for (size_t i = words.size() * 32; i < n; ++i) row[i] = kNegInf;
}
namespace {

bool InRange(int32_t token, size_t vocab) {
  return token >= 0 && static_cast<size_t>(token) < vocab;
}

}  // namespace

void MaskTokens(std::span<float> row, std::span<const int32_t> token_ids) {
  for (int32_t token : token_ids) {
    if (InRange(token, row.size())) row[token] = -std::numeric_limits<float>::infinity();
  }
}

void ApplyLogitBias(std::span<float> row, std::span<const std::pair<int32_t, float>> bias) {
  for (const auto& [token, value] : bias) {
    if (InRange(token, row.size())) row[token] += value;
  }
}

void ApplyRepetitionPenalty(std::span<float> row, float penalty,
                            std::span<const int32_t> prompt_ids,
                            std::span<const int32_t> output_ids,
                            std::vector<uint8_t>& seen_scratch) {
  PAGELLM_CHECK(seen_scratch.size() >= row.size());
  auto penalize = [&](std::span<const int32_t> ids) {
    for (int32_t token : ids) {
      if (!InRange(token, row.size()) || seen_scratch[token]) continue;
      seen_scratch[token] = 1;
      float& logit = row[token];
      logit = logit > 0.0f ? logit / penalty : logit * penalty;
    }
  };
  penalize(prompt_ids);
  penalize(output_ids);
  // Clear only what we set so the scratch costs O(touched), not O(vocab).
  for (int32_t token : prompt_ids) {
    if (InRange(token, row.size())) seen_scratch[token] = 0;
  }
  for (int32_t token : output_ids) {
    if (InRange(token, row.size())) seen_scratch[token] = 0;
  }
}

void ApplyPresenceFrequencyPenalties(std::span<float> row, float presence, float frequency,
                                     std::span<const int32_t> output_ids,
                                     std::vector<int32_t>& count_scratch) {
  PAGELLM_CHECK(count_scratch.size() >= row.size());
  for (int32_t token : output_ids) {
    if (InRange(token, row.size())) ++count_scratch[token];
  }
  // Second pass applies each distinct token once (count is reset to 0 after use),
  // which also leaves the scratch clean.
  for (int32_t token : output_ids) {
    if (!InRange(token, row.size()) || count_scratch[token] == 0) continue;
    const int32_t count = count_scratch[token];
    row[token] -= presence + frequency * static_cast<float>(count);
    count_scratch[token] = 0;
  }
}

}  // namespace pagellm
