#include "bench/datasets.h"

#include <algorithm>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "common/json.h"
#include "common/logging.h"

namespace pagellm::bench {
namespace {

using tokenizer::Tokenizer;

constexpr int kMaxLengthRetries = 20;

// Ids a random prompt may use: the base vocabulary, without added (special or not) tokens,
// so prompts are plain text.
std::vector<int32_t> AllowedTokenIds(const Tokenizer& tok) {
  std::vector<int32_t> ids;
  ids.reserve(static_cast<size_t>(tok.vocab_size()));
  for (int32_t id = 0; id < tok.vocab_size(); ++id) {
    if (tok.added_vocabulary().FindById(id) != nullptr || tok.IdToToken(id).empty()) continue;
    ids.push_back(id);
  }
  return ids;
}

// vLLM's gen_prompt_decode_to_target_len: decode, re-encode, truncate or top up, repeat.
// Returns the prompt text; *num_tokens is its exact token count.
std::string DecodeToTargetLen(const Tokenizer& tok, std::vector<int32_t> ids, int64_t target,
                              const std::vector<int32_t>& allowed, std::mt19937_64& rng,
                              int64_t* num_tokens) {
  std::uniform_int_distribution<size_t> pick(0, allowed.size() - 1);
  std::string prompt;
  for (int attempt = 0;; ++attempt) {
    prompt = tok.Decode(ids);
    ids = tok.Encode(prompt);
    const int64_t len = static_cast<int64_t>(ids.size());
    if (len == target || attempt == kMaxLengthRetries) break;
    if (len > target) {
      ids.resize(static_cast<size_t>(target));
    } else {
      for (int64_t i = len; i < target; ++i) ids.push_back(allowed[pick(rng)]);
    }
  }
  *num_tokens = static_cast<int64_t>(ids.size());
  if (*num_tokens != target)
    PLOG_WARN("random prompt has {} tokens instead of {} after {} retries", *num_tokens, target, kMaxLengthRetries);
  return prompt;
}

Status ValidateParams(const RandomDatasetParams& p) {
  if (p.range_ratio < 0 || p.range_ratio >= 1)
    return InvalidArgumentError(fmt::format("--random-range-ratio must be in [0, 1), got {}", p.range_ratio));
  if (p.input_len < 1 || p.output_len < 1 || p.prefix_len < 0)
    return InvalidArgumentError("--random-input-len and --random-output-len must be >= 1, --random-prefix-len >= 0");
  return OkStatus();
}

std::pair<int64_t, int64_t> LengthRange(int64_t len, double ratio) {
  const int64_t lo = static_cast<int64_t>(std::floor(static_cast<double>(len) * (1 - ratio)));
  const int64_t hi = static_cast<int64_t>(std::ceil(static_cast<double>(len) * (1 + ratio)));
  return {std::max<int64_t>(lo, 1), std::max<int64_t>(hi, 1)};
}

// Builds the prompts for the given per-request input lengths (before range sampling).
StatusOr<std::vector<SampleRequest>> BuildRandomPrompts(const Tokenizer& tok, const std::vector<int64_t>& base_lens,
                                                        const RandomDatasetParams& params, uint64_t seed) {
  PAGELLM_RETURN_IF_ERROR(ValidateParams(params));
  const std::vector<int32_t> allowed = AllowedTokenIds(tok);
  if (allowed.empty()) return InvalidArgumentError("the tokenizer has no ordinary tokens to build prompts from");
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, allowed.size() - 1);
  std::vector<int32_t> prefix;
  for (int64_t i = 0; i < params.prefix_len; ++i) prefix.push_back(allowed[pick(rng)]);
  const auto [out_lo, out_hi] = LengthRange(params.output_len, params.range_ratio);
  std::vector<SampleRequest> requests;
  for (size_t i = 0; i < base_lens.size(); ++i) {
    const auto [in_lo, in_hi] = LengthRange(base_lens[i], params.range_ratio);
    const int64_t input_len = std::uniform_int_distribution<int64_t>(in_lo, in_hi)(rng);
    const int64_t output_len = std::uniform_int_distribution<int64_t>(out_lo, out_hi)(rng);
    const size_t offset = pick(rng);
    std::vector<int32_t> ids = prefix;
    for (int64_t k = 0; k < input_len; ++k)
      ids.push_back(allowed[(offset + i + static_cast<size_t>(k)) % allowed.size()]);
    SampleRequest request;
    request.prompt = DecodeToTargetLen(tok, std::move(ids), params.prefix_len + input_len, allowed, rng,
                                       &request.prompt_len);
    request.expected_output_len = output_len;
    requests.push_back(std::move(request));
  }
  return requests;
}

bool IsValidShareGptPair(int64_t prompt_len, int64_t output_len, bool fixed_output_len) {
  if (prompt_len < 4 || (!fixed_output_len && output_len < 4)) return false;
  return prompt_len <= 1024 && prompt_len + output_len <= 2048;
}

StatusOr<std::vector<std::pair<std::string, std::string>>> ReadShareGptPairs(const std::string& path) {
  PAGELLM_ASSIGN_OR_RETURN(Json data, ReadJsonFile(path));
  if (!data.is_array()) return InvalidArgumentError(fmt::format("{}: expected a JSON list of conversations", path));
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const Json& entry : data) {
    if (!entry.is_object() || !entry.contains("conversations")) continue;
    const Json& turns = entry["conversations"];
    if (!turns.is_array() || turns.size() < 2) continue;
    const Json& first = turns[0];
    const Json& second = turns[1];
    if (!first.is_object() || !second.is_object() || !first.contains("value") || !second.contains("value") ||
        !first["value"].is_string() || !second["value"].is_string())
      continue;
    pairs.emplace_back(first["value"].get<std::string>(), second["value"].get<std::string>());
  }
  return pairs;
}

}  // namespace

StatusOr<std::vector<SampleRequest>> SampleRandomRequests(const Tokenizer& tokenizer, int64_t num_requests,
                                                          const RandomDatasetParams& params, uint64_t seed) {
  if (num_requests < 0) return InvalidArgumentError("--num-prompts must be non-negative");
  return BuildRandomPrompts(tokenizer, std::vector<int64_t>(static_cast<size_t>(num_requests), params.input_len),
                            params, seed);
}

std::vector<int64_t> MixedInputLens(int64_t num_requests, uint64_t seed) {
  constexpr size_t kNumClasses = std::size(kMixedLengthClasses);
  int64_t counts[kNumClasses];
  int64_t remainders[kNumClasses];  // in 1/100 of a request
  int64_t assigned = 0;
  for (size_t c = 0; c < kNumClasses; ++c) {
    counts[c] = num_requests * kMixedLengthClasses[c].percent / 100;
    remainders[c] = num_requests * kMixedLengthClasses[c].percent % 100;
    assigned += counts[c];
  }
  for (; assigned < num_requests; ++assigned) {
    const size_t best = static_cast<size_t>(std::max_element(remainders, remainders + kNumClasses) - remainders);
    ++counts[best];
    remainders[best] = -1;
  }
  std::vector<int64_t> lens;
  for (size_t c = 0; c < kNumClasses; ++c) lens.insert(lens.end(), static_cast<size_t>(counts[c]), kMixedLengthClasses[c].input_len);
  std::mt19937_64 rng(seed ^ 0x6d69786564ULL);  // "mixed": independent of the prompt stream
  std::shuffle(lens.begin(), lens.end(), rng);
  return lens;
}

StatusOr<std::vector<SampleRequest>> SampleMixedRequests(const Tokenizer& tokenizer, int64_t num_requests,
                                                         const RandomDatasetParams& params, uint64_t seed) {
  if (num_requests < 0) return InvalidArgumentError("--num-prompts must be non-negative");
  return BuildRandomPrompts(tokenizer, MixedInputLens(num_requests, seed), params, seed);
}

StatusOr<std::vector<SampleRequest>> SampleShareGptRequests(const Tokenizer& tokenizer, const std::string& path,
                                                            int64_t num_requests, std::optional<int64_t> output_len,
                                                            uint64_t seed) {
  if (path.empty()) return InvalidArgumentError("--dataset-name sharegpt needs --dataset-path FILE.json");
  PAGELLM_ASSIGN_OR_RETURN(auto pairs, ReadShareGptPairs(path));
  std::mt19937_64 rng(seed);
  std::shuffle(pairs.begin(), pairs.end(), rng);
  std::vector<SampleRequest> requests;
  for (const auto& [prompt, completion] : pairs) {
    if (static_cast<int64_t>(requests.size()) >= num_requests) break;
    const int64_t prompt_len = static_cast<int64_t>(tokenizer.Encode(prompt).size());
    const int64_t out_len = output_len ? *output_len : static_cast<int64_t>(tokenizer.Encode(completion).size());
    if (!IsValidShareGptPair(prompt_len, out_len, output_len.has_value())) continue;
    requests.push_back({prompt, prompt_len, out_len});
  }
  if (requests.empty() && num_requests > 0)
    return InvalidArgumentError(fmt::format("{}: no usable conversation (prompt 4..1024 tokens, total <= 2048)", path));
  const size_t num_unique = requests.size();
  std::uniform_int_distribution<size_t> pick(0, num_unique == 0 ? 0 : num_unique - 1);
  while (static_cast<int64_t>(requests.size()) < num_requests) requests.push_back(requests[pick(rng)]);
  return requests;
}

}  // namespace pagellm::bench
