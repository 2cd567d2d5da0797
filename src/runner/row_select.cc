#include "runner/row_select.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>

#include "common/status.h"

namespace pagellm {

float MaxRow(const float* row, int32_t n) {
  float best = -std::numeric_limits<float>::infinity();
  int32_t i = 0;
  if (n >= 8) {
    __m256 acc = _mm256_set1_ps(best);
    for (; i + 8 <= n; i += 8) acc = _mm256_max_ps(acc, _mm256_loadu_ps(row + i));
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, acc);
    for (float v : lanes) best = std::max(best, v);
  }
  for (; i < n; ++i) best = std::max(best, row[i]);
  return best;
}

int32_t ArgmaxRow(const float* row, int32_t n) {
  PAGELLM_CHECK(n >= 1);
  // Two passes (max, then first index equal to it) keep both passes branch-free and
  // vectorised; the row is L2-resident after the first pass.
  const float best = MaxRow(row, n);
  int32_t i = 0;
  const __m256 target = _mm256_set1_ps(best);
  for (; i + 8 <= n; i += 8) {
    const __m256 eq = _mm256_cmp_ps(_mm256_loadu_ps(row + i), target, _CMP_EQ_OQ);
    const int mask = _mm256_movemask_ps(eq);
    if (mask != 0) return i + __builtin_ctz(static_cast<unsigned>(mask));
  }
  for (; i < n; ++i) {
    if (row[i] == best) return i;
  }
  return 0;  // every entry was NaN
}

void CollectTopK(const float* row, int32_t n, int32_t k, std::vector<Candidate>& out) {
  PAGELLM_CHECK(k >= 1);
  out.clear();
  const float neg_inf = -std::numeric_limits<float>::infinity();
  float threshold = neg_inf;
  if (k < n) {
    // Min-heap of the k largest values seen so far; its top is the running k-th value.
    std::priority_queue<float, std::vector<float>, std::greater<float>> heap;
    for (int32_t i = 0; i < n; ++i) {
      const float v = row[i];
      if (static_cast<int32_t>(heap.size()) < k) {
        heap.push(v);
      } else if (v > heap.top()) {
        heap.pop();
        heap.push(v);
      }
    }
    threshold = heap.top();
  }
  for (int32_t i = 0; i < n; ++i) {
    if (row[i] >= threshold && row[i] > neg_inf) out.push_back({row[i], i});
  }
}

void SortCandidatesDescending(std::vector<Candidate>& cands) {
  std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
    return a.weight != b.weight ? a.weight > b.weight : a.token < b.token;
  });
}

void KeepTopP(std::vector<Candidate>& cands, double top_p, double total_weight) {
  SortCandidatesDescending(cands);
  const double limit = top_p * total_weight;
  double before = 0.0;
  size_t keep = 0;
  while (keep < cands.size() && (keep == 0 || before < limit)) {
    before += cands[keep].weight;
    ++keep;
  }
  cands.resize(keep);
}

}  // namespace pagellm

