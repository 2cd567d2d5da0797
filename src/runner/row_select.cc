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

namespace {

// Calls visit(i) for every i in [begin, n) with row[i] > *threshold (re-read after each
// visit, since visit may raise it). Blocks of 8 with no candidate are skipped with
// one vector compare, which is almost every block once the threshold settles.
template <typename Visit>
void ForEachAbove(const float* row, int32_t begin, int32_t n, const float* threshold,
                  Visit visit) {
  int32_t i = begin;
  for (; i + 8 <= n; i += 8) {
    const __m256 t = _mm256_set1_ps(*threshold);
    int mask = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(row + i), t, _CMP_GT_OQ));
    while (mask != 0) {
      const int lane = __builtin_ctz(static_cast<unsigned>(mask));
      mask &= mask - 1;
      if (row[i + lane] > *threshold) visit(i + lane);
    }
  }
  for (; i < n; ++i) {
    if (row[i] > *threshold) visit(i);
  }
}

}  // namespace

void CollectTopK(const float* row, int32_t n, int32_t k, std::vector<Candidate>& out) {
  PAGELLM_CHECK(k >= 1);
  out.clear();
  const float neg_inf = -std::numeric_limits<float>::infinity();
  float threshold = neg_inf;
  if (k < n) {
    // Min-heap of the k largest values seen so far; its top is the running k-th value.
    std::priority_queue<float, std::vector<float>, std::greater<float>> heap;
    for (int32_t i = 0; i < k; ++i) heap.push(row[i]);
    threshold = heap.top();
    ForEachAbove(row, k, n, &threshold, [&](int32_t i) {
      heap.pop();
      heap.push(row[i]);
      threshold = heap.top();
    });
  }
  // Entries equal to the k-th value are kept too (vLLM's >= mask), hence the
  // next-lower float as the strict bound.
  const float bound = std::nextafter(threshold, neg_inf);
  ForEachAbove(row, 0, n, &bound, [&](int32_t i) {
    if (row[i] > neg_inf) out.push_back({row[i], i});
  });
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

