#include "spec/rejection_sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace pagellm {
namespace {

std::vector<float> RandomDistribution(std::mt19937_64& g, int32_t n, double sharpness) {
  std::exponential_distribution<double> e(1.0);
  std::vector<double> w(n);
  double s = 0.0;
  for (double& x : w) s += (x = std::pow(e(g), sharpness));
  std::vector<float> p(n);
  for (int32_t i = 0; i < n; ++i) p[i] = static_cast<float>(w[i] / s);
  return p;
}

int32_t Draw(const std::vector<float>& p, double u) {
  double acc = 0.0;
  for (size_t i = 0; i < p.size(); ++i) {
    acc += p[i];
    if (u < acc) return static_cast<int32_t>(i);
  }
  return static_cast<int32_t>(p.size()) - 1;
}

double TotalVariation(const std::vector<int64_t>& counts, const std::vector<float>& p, int64_t num) {
  double tv = 0.0;
  for (size_t i = 0; i < p.size(); ++i) tv += std::abs(static_cast<double>(counts[i]) / num - p[i]);
  return tv / 2.0;
}

constexpr int64_t kSamples = 1'000'000;

// Draft from q, accept or recover against p: the output must follow p.
TEST(RejectionSamplerTest, OutputFollowsTargetForAnyProposal) {
  std::mt19937_64 g(17);
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  for (int trial = 0; trial < 3; ++trial) {
    const int32_t n = 6 + 5 * trial;
    const std::vector<float> p = RandomDistribution(g, n, 1.0 + trial);
    const std::vector<float> q = RandomDistribution(g, n, 2.0);
    std::vector<int64_t> counts(n, 0);
    int64_t accepted = 0;
    for (int64_t s = 0; s < kSamples; ++s) {
      const int32_t draft = Draw(q, uni(g));
      const SpecDecision d = AcceptOrRecover(p, q, draft, uni(g), uni(g));
      ++counts[d.token];
      accepted += d.accepted;
    }
    const double tv = TotalVariation(counts, p, kSamples);
    EXPECT_LT(tv, 0.005) << "trial " << trial;
    // The acceptance rate is 1 - TV(p, q) (Leviathan et al., Theorem 3.5).
    double tv_pq = 0.0;
    for (int32_t i = 0; i < n; ++i) tv_pq += std::abs(p[i] - q[i]) / 2.0;
    EXPECT_NEAR(static_cast<double>(accepted) / kSamples, 1.0 - tv_pq, 0.005) << "trial " << trial;
  }
}

// N-gram drafts are point masses: both the explicit rule (keep with p(d), else p
// without d) and the engine's "draw from p, keep iff equal" give p.
TEST(RejectionSamplerTest, PointMassDraftsBothWays) {
  std::mt19937_64 g(5);
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  const std::vector<float> p = RandomDistribution(g, 9, 1.5);
  const int32_t draft = 3;
  std::vector<int64_t> explicit_counts(p.size(), 0), compare_counts(p.size(), 0);
  int64_t explicit_accepts = 0, compare_accepts = 0;
  for (int64_t s = 0; s < kSamples; ++s) {
    const SpecDecision d = AcceptOrRecover(p, {}, draft, uni(g), uni(g));
    ++explicit_counts[d.token];
    explicit_accepts += d.accepted;
    const int32_t x = Draw(p, uni(g));
    ++compare_counts[x];
    compare_accepts += x == draft;
  }
  EXPECT_LT(TotalVariation(explicit_counts, p, kSamples), 0.005);
  EXPECT_LT(TotalVariation(compare_counts, p, kSamples), 0.005);
  EXPECT_NEAR(static_cast<double>(explicit_accepts) / kSamples, p[draft], 0.003);
  EXPECT_NEAR(static_cast<double>(compare_accepts) / kSamples, p[draft], 0.003);
}

TEST(RejectionSamplerTest, EdgeCases) {
  const std::vector<float> p = {0.0f, 1.0f, 0.0f};
  // The target is certain: a wrong draft is always replaced by the certain token.
  EXPECT_EQ(AcceptOrRecover(p, {}, 0, 0.0, 0.5).token, 1);
  EXPECT_FALSE(AcceptOrRecover(p, {}, 2, 0.9, 0.99).accepted);
  EXPECT_TRUE(AcceptOrRecover(p, {}, 1, 0.999, 0.0).accepted);
  // p == q: always accepted.
  EXPECT_TRUE(AcceptOrRecover(p, p, 1, 0.999, 0.3).accepted);
}

}  // namespace
}  // namespace pagellm
