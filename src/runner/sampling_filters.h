// Sampling filters: temperature, min_p, top_k, top_p and the final draw, over one
// processed logits row. Split from the Sampler so the kept candidate SETS can be
// tested exactly against a brute-force reference.
//
//   FilterResult f = FilterCandidates(logits, n, 0.7f, {.top_k = 20, .top_p = 0.95},
//                                     weights, cands);
//   int32_t token = f.dense ? DrawDense(weights, n, f.total_weight, u)
//                           : DrawCandidates(cands, u);
//
// Order and semantics follow vLLM v1: min_p (p_i >= min_p * p_max) -> top_k (keep
// values >= the k-th largest) -> top_p over the renormalised survivors (keep the
// smallest descending prefix whose mass reaches p). Nothing sorts the whole row:
// top_k uses a heap, top_p without top_k a per-binade mass histogram (see .cc).
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
  // true: no top_k/top_p; `weights` holds exp(z/T - z_max/T) (0 where min_p cut).
  // false: `cands` holds the survivors with those weights.
  bool dense = false;
  double total_weight = 0.0;  // sum of surviving weights (dense or candidates)
};

// Applies temperature, min_p, top_k, top_p to logits: [n] (read only). weights: [n]
// scratch (written only on the dense and top_p-only paths). An all -inf row yields
// dense with total_weight 0. Precondition: temperature > 0.
// NOTE: top_k selects on the unscaled logits (division by T > 0 preserves order), so
// the full row is never divided when top_k is set.
FilterResult FilterCandidates(const float* logits, int32_t n, float temperature,
                              const FilterSpec& spec, float* weights,
                              std::vector<Candidate>& cands);

// Inverse-CDF draw with u in [0, 1): walks weights in ascending token order (dense)
// or in the given candidate order. Returns -1 if every weight is zero.
int32_t DrawDense(const float* weights, int32_t n, double total_weight, double u);
int32_t DrawCandidates(const std::vector<Candidate>& cands, double u);

}  // namespace pagellm
