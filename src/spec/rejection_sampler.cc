#include "spec/rejection_sampler.h"

#include <algorithm>

#include "common/status.h"

namespace pagellm {

SpecDecision AcceptOrRecover(std::span<const float> p, std::span<const float> q, int32_t draft, double u, double v) {
  const int32_t n = static_cast<int32_t>(p.size());
  PAGELLM_CHECK(draft >= 0 && draft < n && (q.empty() || q.size() == p.size()));
  const double pd = p[draft];
  const double qd = q.empty() ? 1.0 : q[draft];
  // Accept with probability min(1, p/q); q(d) == 0 cannot be proposed, accept if p allows.
  if (qd <= 0.0 ? pd > 0.0 : u * qd < pd) return {true, draft};
  // Residual max(p - q, 0), drawn by inverse CDF without normalising first.
  auto residual = [&](int32_t i) {
    const double qi = q.empty() ? (i == draft ? 1.0 : 0.0) : q[i];
    return std::max(static_cast<double>(p[i]) - qi, 0.0);
  };
  double total = 0.0;
  for (int32_t i = 0; i < n; ++i) total += residual(i);
  if (total <= 0.0) return {true, draft};  // p == q up to rounding: the draft is as good
  const double target = v * total;
  double acc = 0.0;
  int32_t last = -1;
  for (int32_t i = 0; i < n; ++i) {
    const double r = residual(i);
    if (r <= 0.0) continue;
    acc += r;
    last = i;
    if (target < acc) return {false, i};
  }
  return {false, last};  // rounding left target at the very top
}

}  // namespace pagellm
