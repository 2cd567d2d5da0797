// Sampling filters: temperature, min_p, top_k, top_p and the final draw, over one
// processed logits row. Split from the Sampler so the kept candidate SETS can be
// tested exactly against a brute-force reference.
//
//   ApplyTemperature(z, n, 0.7f);                          // z: [n] logits -> logits/T
//   FilterResult f = FilterCandidates(z, n, {.top_k = 20, .top_p = 0.95}, cands);
//   int32_t token = f.dense ? DrawDense(z, n, f.total_weight, u) : DrawCandidates(cands, u);
//
// Order and semantics follow vLLM v1: min_p (p_i >= min_p * p_max) -> top_k (keep
// values >= the k-th largest) -> top_p over the renormalised survivors (keep the
// smallest descending prefix whose mass reaches p). Nothing sorts the whole row:
// top_k uses a heap, top_p without top_k a threshold pass (see sampling_filters.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "runner/row_select.h"

namespace pagellm {

struct FilterSpec {
  int32_t top_k = 0;    // <= 0 or >= n: disabled
  double top_p = 1.0;   // >= 1: disabled
  float min_p = 0.0f;   // <= 0: disabled
};

struct FilterResult {
  // true: no top_k/top_p; z now holds dense weights exp(z - z_max) (0 where min_p cut).
  // false: `cands` holds the survivors with weights exp(z - z_max).
  bool dense = false;
  double total_weight = 0.0;  // sum of surviving weights (dense or candidates)
};

// z[i] /= temperature. Precondition: temperature > 0.
void ApplyTemperature(float* z, int32_t n, float temperature);

// Applies min_p, top_k, top_p to the temperature-scaled row z: [n]. z may be
// overwritten with weights. An all -inf row yields dense with total_weight 0.
FilterResult FilterCandidates(float* z, int32_t n, const FilterSpec& spec,
                              std::vector<Candidate>& cands);

// Inverse-CDF draw with u in [0, 1): walks weights in ascending token order (dense)
// or in the given candidate order. Returns -1 if every weight is zero.
int32_t DrawDense(const float* weights, int32_t n, double total_weight, double u);
int32_t DrawCandidates(const std::vector<Candidate>& cands, double u);

}  // namespace pagellm
