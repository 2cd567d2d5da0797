// Logits processors: in-place edits of one row of fp32 logits before sampling.
//
// Each function is pure over its arguments (row plus borrowed token ids) and runs in
// O(number of touched tokens), not O(vocab): penalties and biases touch only the
// tokens a request has seen or named. The sampler applies them in vLLM v1's order:
//   min_tokens mask -> logit_bias -> repetition -> presence/frequency.
//
//   std::vector<uint8_t> seen(vocab, 0);    // scratch, all-zero between calls
//   ApplyRepetitionPenalty(row, 1.1f, prompt_ids, output_ids, seen);
//   ApplyPresenceFrequencyPenalties(row, 0.5f, 0.2f, output_ids, counts);
//
// Token ids outside [0, row.size()) are ignored: the request validator rejects them
// for user input, and the prompt can never contain them with a matching tokenizer.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace pagellm {

// Structured outputs: row[i] = -inf for every i whose bit (words[i >> 5] >> (i & 31))
// is clear; ids beyond the mask's 32 * words.size() are masked too.
void ApplyTokenMask(std::span<float> row, std::span<const uint32_t> words);

// row[id] = -inf for every listed id (used to forbid EOS/stop ids before min_tokens).
void MaskTokens(std::span<float> row, std::span<const int32_t> token_ids);

// row[id] += bias for each (id, bias); repeated ids add up.
void ApplyLogitBias(std::span<float> row, std::span<const std::pair<int32_t, float>> bias);

// HF/CTRL repetition penalty over the UNIQUE tokens of prompt + output:
// a positive logit is divided by `penalty`, a negative one multiplied by it.
// `seen_scratch` must have row.size() entries, all zero; it is all zero again on return.
void ApplyRepetitionPenalty(std::span<float> row, float penalty,
                            std::span<const int32_t> prompt_ids,
                            std::span<const int32_t> output_ids,
                            std::vector<uint8_t>& seen_scratch);

// OpenAI penalties over generated tokens only:
//   row[t] -= presence * (count[t] > 0) + frequency * count[t]
// `count_scratch` must have row.size() entries, all zero; it is all zero again on return.
void ApplyPresenceFrequencyPenalties(std::span<float> row, float presence, float frequency,
                                     std::span<const int32_t> output_ids,
                                     std::vector<int32_t>& count_scratch);

}  // namespace pagellm
