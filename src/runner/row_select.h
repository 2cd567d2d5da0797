// Row selection kernels: argmax, top-k and top-p over one row of fp32 values,
// without sorting the whole vocabulary (151,936 entries for Qwen).
//
//   int32_t best = ArgmaxRow(row, n);              // lowest id wins ties
//   std::vector<Candidate> c;
//   CollectTopK(row, n, 20, c);                    // >= 20 entries (ties kept)
//   KeepTopP(c, 0.95, total_weight);               // sorted, truncated prefix
//
// Tie rules follow vLLM's mask-based filters: top-k keeps every entry whose value
// equals the k-th largest; top-p orders by weight (then lower id first) and keeps
// entry i while the weight strictly before it is < p * total.
#pragma once

#include <cstdint>
#include <vector>

namespace pagellm {

// One surviving token. `weight` is a logit in CollectTopK's output and an
// unnormalised probability exp(z - z_max) once the sampler has converted it.
struct Candidate {
  float weight;
  int32_t token;
};

// Index of the largest of row[0, n); the lowest index among equal maxima.
// AVX2-vectorised. Precondition: n >= 1. NaNs are never selected unless all are NaN.
int32_t ArgmaxRow(const float* row, int32_t n);

// Largest value of row[0, n) (-inf if n == 0).
float MaxRow(const float* row, int32_t n);

// Replaces `out` with the entries of row[0, n) whose value is >= the k-th largest
// value and > -inf, in ascending token order. Uses a size-k heap: O(n log k) worst
// case, O(n) in practice because most entries fail one comparison.
// Precondition: k >= 1.
void CollectTopK(const float* row, int32_t n, int32_t k, std::vector<Candidate>& out);

// Sorts `cands` by weight descending (ties: lower token first) and truncates it to the
// nucleus: entry i stays while sum(weight[0..i-1]) < top_p * total_weight. At least
// one entry always stays. `total_weight` is the mass the probabilities are relative
// to (it may exceed the sum over `cands` when they are a pre-filtered subset).
void KeepTopP(std::vector<Candidate>& cands, double top_p, double total_weight);

// Sorts by weight descending, ties by lower token.
void SortCandidatesDescending(std::vector<Candidate>& cands);

}  // namespace pagellm
