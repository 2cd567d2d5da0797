#include "runner/sampler.h"

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "common/status.h"
#include "runner/logits_processors.h"
#include "runner/logprobs.h"
#include "runner/row_select.h"
#include "runner/sampling_filters.h"

namespace pagellm {

// Per-thread buffers, sized to the vocabulary once and reused across steps
// (a fresh 600 KB allocation per row would cost page faults on every token).
struct Sampler::RowScratch {
  std::vector<float> logits;        // [vocab] processed copy of one row
  std::vector<float> weights;       // [vocab] unnormalised probabilities
  std::vector<uint8_t> seen;        // [vocab] all zero between uses
  std::vector<int32_t> counts;      // [vocab] all zero between uses
  std::vector<Candidate> cands;
  std::vector<int32_t> masked_ids;  // EOS + stop_token_ids during min_tokens
};

namespace {

// True if the row must be copied and edited; otherwise it is read in place.
bool NeedsEdits(const SamplingRequest& r, bool min_tokens_active) {
  const SamplingParams& p = *r.params;
  return min_tokens_active || !r.allowed_mask.empty() || !p.logit_bias.empty() ||
         p.repetition_penalty.value_or(1.0f) != 1.0f || p.presence_penalty != 0.0f ||
         p.frequency_penalty != 0.0f;
}

// Random path: temperature -> min_p/top_k/top_p -> draw. logits: [n], read only.
int32_t SampleRandom(const float* logits, int32_t n, const SamplingParams& p, double u,
                     float* weights, std::vector<Candidate>& cands) {
  const FilterSpec spec{.top_k = p.top_k.value_or(0),
                        .top_p = p.top_p.value_or(1.0f),
                        .min_p = p.min_p.value_or(0.0f)};
  const FilterResult filtered =
      FilterCandidates(logits, n, p.temperature.value_or(1.0f), spec, weights, cands);
  return filtered.dense ? DrawDense(weights, n, filtered.total_weight, u)
                        : DrawCandidates(cands, u);
}

bool MaskAllows(std::span<const uint32_t> words, int32_t id) {
  return id >= 0 && static_cast<size_t>(id >> 5) < words.size() && ((words[id >> 5] >> (id & 31)) & 1u);
}

int32_t FirstAllowed(std::span<const uint32_t> words, int32_t n) {
  for (int32_t i = 0; i < n; ++i) {
    if (MaskAllows(words, i)) return i;
  }
  return 0;
}

}  // namespace

void Sampler::ApplyLogitsProcessors(const SamplingRequest& request, bool min_tokens_active,
                                    std::span<float> row, RowScratch& s) const {
  const SamplingParams& p = *request.params;
  if (!request.allowed_mask.empty()) ApplyTokenMask(row, request.allowed_mask);
  if (min_tokens_active) {
    s.masked_ids.assign(config_.eos_token_ids.begin(), config_.eos_token_ids.end());
    s.masked_ids.insert(s.masked_ids.end(), p.stop_token_ids.begin(), p.stop_token_ids.end());
    MaskTokens(row, s.masked_ids);
  }
  ApplyLogitBias(row, p.logit_bias);
  const float repetition = p.repetition_penalty.value_or(1.0f);
  if (repetition != 1.0f) {
    ApplyRepetitionPenalty(row, repetition, request.prompt_ids, request.output_ids, s.seen);
  }
  if (p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f) {
    ApplyPresenceFrequencyPenalties(row, p.presence_penalty, p.frequency_penalty,
                                    request.output_ids, s.counts);
  }
}

Sampler::Sampler(SamplerConfig config) : config_(std::move(config)) {}
Sampler::~Sampler() = default;

Sampler::RowScratch& Sampler::ScratchFor(int thread_idx, int32_t vocab) {
  RowScratch& s = *scratch_[thread_idx];
  if (static_cast<int32_t>(s.logits.size()) < vocab) {
    s.logits.resize(vocab);
    s.weights.resize(vocab);
    s.seen.assign(vocab, 0);
    s.counts.assign(vocab, 0);
  }
  return s;
}

std::vector<SampleResult> Sampler::Sample(const float* logits, int32_t vocab,
                                          std::span<const SamplingRequest> requests) {
  std::vector<const float*> rows(requests.size());
  for (size_t r = 0; r < rows.size(); ++r) rows[r] = logits + static_cast<int64_t>(r) * vocab;
  return Sample(rows, vocab, requests);
}

std::vector<SampleResult> Sampler::Sample(std::span<const float* const> rows, int32_t vocab,
                                          std::span<const SamplingRequest> requests) {
  PAGELLM_CHECK(rows.size() == requests.size());
  const int32_t num_rows = static_cast<int32_t>(requests.size());
  std::vector<SampleResult> results(num_rows);
  const int num_threads = num_rows >= 2 ? std::min(omp_get_max_threads(), num_rows) : 1;
  while (static_cast<int>(scratch_.size()) < num_threads) {
    scratch_.push_back(std::make_unique<RowScratch>());
  }
#pragma omp parallel for num_threads(num_threads) schedule(dynamic, 1) if (num_threads > 1)
  for (int32_t r = 0; r < num_rows; ++r) {
    RowScratch& scratch = ScratchFor(omp_get_thread_num(), vocab);
    results[r] = SampleRow(rows[static_cast<size_t>(r)], vocab, requests[r], scratch);
  }
  return results;
}

SampleResult Sampler::SampleRow(const float* raw, int32_t vocab, const SamplingRequest& request,
                                RowScratch& s) const {
  PAGELLM_CHECK(request.params != nullptr);
  const SamplingParams& p = *request.params;
  const int32_t n = config_.num_valid_tokens > 0 ? std::min(config_.num_valid_tokens, vocab)
                                                 : vocab;
  const bool min_tokens_active = static_cast<int64_t>(request.output_ids.size()) < p.min_tokens;
  // One draw per token even when greedy, so the stream position equals the number
  // of sampled tokens (switching a request's knobs never desynchronises it).
  PAGELLM_CHECK(request.rng != nullptr || p.is_greedy());
  const double u = request.rng != nullptr ? request.rng->NextUniform() : 0.0;

  const float* logits = raw;
  if (NeedsEdits(request, min_tokens_active)) {
    std::memcpy(s.logits.data(), raw, sizeof(float) * n);
    ApplyLogitsProcessors(request, min_tokens_active, std::span<float>(s.logits.data(), n), s);
    logits = s.logits.data();
  }
  SampleResult result;
  result.token = p.is_greedy() ? ArgmaxRow(logits, n)
                               : SampleRandom(logits, n, p, u, s.weights.data(), s.cands);
  if (result.token < 0) result.token = ArgmaxRow(logits, n);  // every weight was zero
  if (!request.allowed_mask.empty() && !MaskAllows(request.allowed_mask, result.token)) {
    result.token = FirstAllowed(request.allowed_mask, n);  // the processors masked every allowed id
  }
  if (p.logprobs.has_value()) {
    const double lse = LogSumExp(raw, n);
    result.logprob = static_cast<float>(raw[result.token] - lse);
    result.top_logprobs = TopLogprobs(raw, n, *p.logprobs, lse);
  }
  return result;
}

}  // namespace pagellm
