// Logprobs of raw model logits, as returned to the user with `logprobs: N`.
//
// NOTE: like vLLM v1's default (logprobs_mode = "raw_logprobs") these are the
// log-softmax of the RAW logits, before logit_bias, penalties and temperature, so a
// token's reported logprob does not depend on the request's sampling knobs.
//
//   double lse = LogSumExp(row, num_valid_tokens);
//   float chosen = static_cast<float>(row[token] - lse);
//   auto top = TopLogprobs(row, num_valid_tokens, 5, lse);  // [(id, logprob)] desc
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace pagellm {

// log(sum_i exp(row[i])) over row[0, n), accumulated in double. -inf if every entry
// is -inf. Precondition: n >= 1.
double LogSumExp(const float* row, int32_t n);

// The `num_top` largest entries of row[0, n) as (token, row[token] - lse), ordered by
// logprob descending, ties by lower token id. Returns min(num_top, n) entries
// (fewer if some are -inf, e.g. masked).
std::vector<std::pair<int32_t, float>> TopLogprobs(const float* row, int32_t n,
                                                   int32_t num_top, double lse);

}  // namespace pagellm
