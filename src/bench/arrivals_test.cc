#include "bench/arrivals.h"

#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

namespace pagellm::bench {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct GapStats {
  double mean, cv;
};

GapStats Gaps(const std::vector<double>& at) {
  std::vector<double> gaps;
  double prev = 0.0;
  for (double t : at) {
    gaps.push_back(t - prev);
    prev = t;
  }
  double mean = 0, var = 0;
  for (double g : gaps) mean += g;
  mean /= static_cast<double>(gaps.size());
  for (double g : gaps) var += (g - mean) * (g - mean);
  var /= static_cast<double>(gaps.size());
  return {mean, std::sqrt(var) / mean};
}

TEST(ArrivalsTest, InfiniteRateSendsEverythingAtOnce) {
  auto at = ArrivalOffsets(5, {});
  ASSERT_TRUE(at.ok());
  EXPECT_EQ(*at, std::vector<double>(5, 0.0));
}

TEST(ArrivalsTest, GammaMeanRateAndBurstinessCv) {
  constexpr int64_t kNum = 20000;
  constexpr double kRate = 5.0;
  for (double burstiness : {0.25, 1.0, 4.0}) {
    auto at = ArrivalOffsets(kNum, {kRate, burstiness, /*seed=*/7});
    ASSERT_TRUE(at.ok());
    ASSERT_EQ(at->size(), static_cast<size_t>(kNum));
    for (size_t i = 1; i < at->size(); ++i) ASSERT_LE((*at)[i - 1], (*at)[i]);
    // Rescaled so the last arrival is exactly N / rate: the mean rate is exact.
    EXPECT_NEAR(at->back(), kNum / kRate, 1e-9);
    const GapStats s = Gaps(*at);
    EXPECT_NEAR(s.mean, 1.0 / kRate, 1e-12);
    // Gamma(shape k): CV = 1 / sqrt(k). 20k samples: standard error of the CV < 2 %.
    EXPECT_NEAR(s.cv, 1.0 / std::sqrt(burstiness), 0.06 / std::sqrt(burstiness)) << "burstiness " << burstiness;
  }
}

TEST(ArrivalsTest, PoissonCountsHaveUnitDispersion) {
  // A Poisson process: arrivals per 1-s window have variance == mean (= rate).
  auto at = ArrivalOffsets(40000, {20.0, 1.0, 3});
  ASSERT_TRUE(at.ok());
  std::vector<double> counts(2000, 0.0);
  for (double t : *at) {
    const size_t w = static_cast<size_t>(t);
    if (w < counts.size()) counts[w] += 1;
  }
  double mean = 0, var = 0;
  for (double c : counts) mean += c;
  mean /= static_cast<double>(counts.size());
  for (double c : counts) var += (c - mean) * (c - mean);
  var /= static_cast<double>(counts.size());
  EXPECT_NEAR(mean, 20.0, 0.05);
  EXPECT_NEAR(var / mean, 1.0, 0.12);
}

TEST(ArrivalsTest, InfiniteBurstinessIsAFixedInterval) {
  auto at = ArrivalOffsets(4, {2.0, kInf, 0});
  ASSERT_TRUE(at.ok());
  EXPECT_EQ(*at, (std::vector<double>{0.5, 1.0, 1.5, 2.0}));
}

TEST(ArrivalsTest, SeedMakesItReproducible) {
  auto a = ArrivalOffsets(50, {3.0, 0.5, 1});
  auto b = ArrivalOffsets(50, {3.0, 0.5, 1});
  auto c = ArrivalOffsets(50, {3.0, 0.5, 2});
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_NE(*a, *c);
}

TEST(ArrivalsTest, RejectsNonPositiveRateOrBurstiness) {
  EXPECT_FALSE(ArrivalOffsets(3, {0.0, 1.0, 0}).ok());
  EXPECT_FALSE(ArrivalOffsets(3, {-1.0, 1.0, 0}).ok());
  EXPECT_FALSE(ArrivalOffsets(3, {1.0, 0.0, 0}).ok());
  EXPECT_FALSE(ArrivalOffsets(3, {1.0, std::nan(""), 0}).ok());
}

}  // namespace
}  // namespace pagellm::bench
