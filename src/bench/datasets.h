// Benchmark prompts: vLLM's `random` and `sharegpt` datasets, and `mixed`, the production
// mix pagellm's users benchmark (30 % 512, 50 % 2,048, 20 % 16,384 input tokens).
//
//   PAGELLM_ASSIGN_OR_RETURN(auto tok, tokenizer::LoadTokenizer(dir));
//   RandomDatasetParams params{.input_len = 1024, .output_len = 128};
//   PAGELLM_ASSIGN_OR_RETURN(auto requests, SampleRandomRequests(*tok, 100, params, /*seed=*/0));
//   // tok->Encode(requests[i].prompt).size() == requests[i].prompt_len
//
// Random prompts are built as vLLM builds them: consecutive ids of the non-added vocabulary
// from a random offset, decoded to text, re-encoded, then truncated or topped up with
// random ids and decoded again until the text encodes to exactly the target length.
// prompt_len is therefore the exact token count of the prompt under `tokenizer`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "tokenizer/tokenizer.h"

namespace pagellm::bench {

struct SampleRequest {
  std::string prompt;
  int64_t prompt_len = 0;           // tokens of `prompt`
  int64_t expected_output_len = 0;  // sent as max_tokens
};

struct RandomDatasetParams {
  int64_t input_len = 1024;
  int64_t output_len = 128;
  double range_ratio = 0.0;  // lengths uniform in [floor(L(1-r)), ceil(L(1+r))], r in [0, 1)
  int64_t prefix_len = 0;    // shared random prefix in front of every prompt
};

StatusOr<std::vector<SampleRequest>> SampleRandomRequests(const tokenizer::Tokenizer& tokenizer,
                                                          int64_t num_requests,
                                                          const RandomDatasetParams& params, uint64_t seed);

// Input-length classes of the `mixed` dataset.
struct MixedLengthClass {
  int64_t input_len;
  int64_t percent;
};
inline constexpr MixedLengthClass kMixedLengthClasses[] = {{512, 30}, {2048, 50}, {16384, 20}};

// [num_requests] input lengths: exact class counts (largest remainder in integer
// arithmetic, ties to the earlier class, so 10 requests give 3/5/2 and 5 give 2/2/1), in
// an order shuffled by `seed`.
std::vector<int64_t> MixedInputLens(int64_t num_requests, uint64_t seed);

// `mixed`: random prompts whose input lengths follow kMixedLengthClasses; output lengths
// and range_ratio as in `params` (params.input_len is ignored).
StatusOr<std::vector<SampleRequest>> SampleMixedRequests(const tokenizer::Tokenizer& tokenizer,
                                                         int64_t num_requests,
                                                         const RandomDatasetParams& params, uint64_t seed);

// ShareGPT JSON (a list of {"conversations": [{"from", "value"}, ...]}): the first turn
// is the prompt, the second turn's token count the output length unless `output_len` is
// given. Conversations are shuffled by `seed`; those with a prompt < 4 or > 1024 tokens,
// an output < 4 tokens (unless fixed) or a total > 2048 are skipped, as in vLLM; if too
// few remain, random ones are repeated.
StatusOr<std::vector<SampleRequest>> SampleShareGptRequests(const tokenizer::Tokenizer& tokenizer,
                                                            const std::string& path, int64_t num_requests,
                                                            std::optional<int64_t> output_len, uint64_t seed);

}  // namespace pagellm::bench
