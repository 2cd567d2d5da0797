#include "runner/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/status.h"
#include "runner/row_select.h"

namespace pagellm {

double LogSumExp(const float* row, int32_t n) {
  PAGELLM_CHECK(n >= 1);
  const float max_value = MaxRow(row, n);
  if (std::isinf(max_value) && max_value < 0) return -std::numeric_limits<double>::infinity();
  double sum = 0.0;
  // expf per entry (fast) with a double accumulator (exact enough over 151,936 terms).
  for (int32_t i = 0; i < n; ++i) sum += std::exp(row[i] - max_value);
  return max_value + std::log(sum);
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
