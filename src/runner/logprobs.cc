#include "runner/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/status.h"
#include "runner/row_select.h"
#include "runner/vec_exp.h"

namespace pagellm {

double LogSumExp(const float* row, int32_t n) {
  PAGELLM_CHECK(n >= 1);
  const float max_value = MaxRow(row, n);
  if (std::isinf(max_value) && max_value < 0) return -std::numeric_limits<double>::infinity();
  // Vectorised float exp with a double accumulator: ~2e-7 relative per term.
  return max_value + std::log(SumExp(row, n, max_value));
}

std::vector<std::pair<int32_t, float>> TopLogprobs(const float* row, int32_t n,
                                                   int32_t num_top, double lse) {
  std::vector<std::pair<int32_t, float>> top;
  if (num_top <= 0 || n <= 0) return top;
  std::vector<Candidate> cands;
  CollectTopK(row, n, std::min(num_top, n), cands);
  SortCandidatesDescending(cands);  // ties at the k-th value extend the list; trim below
  const size_t num_keep = std::min(cands.size(), static_cast<size_t>(num_top));
  top.reserve(num_keep);
  for (size_t i = 0; i < num_keep; ++i) {
    top.emplace_back(cands[i].token, static_cast<float>(cands[i].weight - lse));
  }
  return top;
}

}  // namespace pagellm
