// Expected values come from numpy 1.x (/usr/bin/python3: np.percentile, np.std, np.median).
#include "bench/stats.h"

#include <vector>

#include <gtest/gtest.h>

namespace pagellm::bench {
namespace {

TEST(StatsTest, MatchesNumpyOnSmallSample) {
  const std::vector<double> x = {0.5, 3.25, 1.0, 7.5, 2.0, 10.0, 4.75};
  EXPECT_NEAR(Percentile(x, 0), 0.5, 1e-12);
  EXPECT_NEAR(Percentile(x, 25), 1.5, 1e-12);
  EXPECT_NEAR(Percentile(x, 50), 3.25, 1e-12);
  EXPECT_NEAR(Percentile(x, 90), 8.5, 1e-12);
  EXPECT_NEAR(Percentile(x, 99), 9.849999999999998, 1e-12);
  EXPECT_NEAR(Percentile(x, 99.9), 9.985000000000001, 1e-12);
  EXPECT_NEAR(Percentile(x, 100), 10.0, 1e-12);
  EXPECT_NEAR(Mean(x), 4.142857142857143, 1e-12);
  EXPECT_NEAR(StdDev(x), 3.2619482096515537, 1e-12);  // ddof = 0
  EXPECT_NEAR(Median(x), 3.25, 1e-12);
}

TEST(StatsTest, MatchesNumpyOnExponentialSample) {
  // np.round(np.random.default_rng(0).exponential(1.0, 50), 6)
  const std::vector<double> z = {
      0.679932, 1.019597, 0.019807, 0.002269, 0.550343, 1.62994,  0.673583, 0.755301, 2.816786, 6.057753,
      3.286428, 0.001288, 2.269095, 0.072498, 1.0694,   0.848933, 3.149909, 0.35401,  0.307111, 1.492219,
      0.037004, 0.135331, 1.030198, 0.774548, 1.737679, 0.41367,  0.448211, 1.852092, 1.725214, 0.323459,
      0.210761, 1.223294, 0.538324, 0.854685, 1.048722, 1.232171, 2.928169, 0.153689, 1.465805, 1.124238,
      1.89805,  0.598992, 0.468685, 0.817107, 0.264469, 0.745822, 0.106062, 1.646947, 2.279238, 0.552102};
  EXPECT_NEAR(Percentile(z, 99), 4.699803749999995, 1e-12);
  EXPECT_NEAR(Percentile(z, 1), 0.00176869, 1e-12);
  EXPECT_NEAR(Percentile(z, 37.5), 0.56968575, 1e-12);
  EXPECT_NEAR(StdDev(z), 1.1022329500893175, 1e-12);
}

TEST(StatsTest, TinyAndEmptyInputs) {
  const std::vector<double> two = {0.1, 0.2};
  EXPECT_NEAR(Percentile(two, 99), 0.199, 1e-12);
  const std::vector<double> one = {5.0};
  EXPECT_EQ(Percentile(one, 99), 5.0);
  EXPECT_EQ(StdDev(one), 0.0);
  const std::vector<double> none;
  EXPECT_EQ(Mean(none), 0.0);
  EXPECT_EQ(Percentile(none, 99), 0.0);
  EXPECT_EQ(StdDev(none), 0.0);
}

TEST(StatsTest, OrderOfInputDoesNotMatter) {
  std::vector<double> a = {9, 1, 8, 2, 7, 3};
  std::vector<double> b = {1, 2, 3, 7, 8, 9};
  for (double q : {10.0, 50.0, 75.0, 99.0}) EXPECT_EQ(Percentile(a, q), Percentile(b, q));
}

}  // namespace
}  // namespace pagellm::bench
