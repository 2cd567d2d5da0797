#include "runner/row_select.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <vector>

namespace pagellm {
namespace {

std::vector<float> RandomRow(int32_t n, uint32_t seed, bool coarse) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> row(n);
  // Coarse rows are rounded to integers so many entries tie.
  for (float& v : row) v = coarse ? std::round(dist(gen)) : dist(gen);
  return row;
}

TEST(RowSelectTest, ArgmaxPicksLowestIdAmongTiesAtEveryPosition) {
  for (int32_t n : {1, 7, 8, 9, 33, 1000}) {
    for (int32_t pos = 0; pos < n; pos += std::max(1, n / 13)) {
      std::vector<float> row(n, -1.0f);
      row[pos] = 5.0f;
      if (pos + 1 < n) row[n - 1] = 5.0f;  // later tie must lose
      EXPECT_EQ(ArgmaxRow(row.data(), n), pos) << "n=" << n << " pos=" << pos;
    }
  }
}

TEST(RowSelectTest, ArgmaxMatchesStdMaxElementOnRandomRows) {
  for (uint32_t seed = 0; seed < 50; ++seed) {
    const std::vector<float> row = RandomRow(1 + seed * 37, seed, seed % 2 == 0);
    const int32_t expected =
        static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
    EXPECT_EQ(ArgmaxRow(row.data(), static_cast<int32_t>(row.size())), expected);
  }
}

TEST(RowSelectTest, ArgmaxHandlesNegativeInfinity) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> row = {-inf, -inf, -3.0f, -inf};
  EXPECT_EQ(ArgmaxRow(row.data(), 4), 2);
  EXPECT_EQ(MaxRow(row.data(), 4), -3.0f);
}

TEST(RowSelectTest, TopKKeepsExactlyValuesAtLeastKthLargest) {
  for (uint32_t seed = 0; seed < 60; ++seed) {
    const int32_t n = 5 + static_cast<int32_t>(seed % 40);
    const std::vector<float> row = RandomRow(n, seed, seed % 3 != 0);
    for (int32_t k : {1, 2, 5, n - 1, n, n + 3}) {
      std::vector<float> sorted = row;
      std::sort(sorted.begin(), sorted.end(), std::greater<float>());
      const float kth = sorted[std::min(k, n) - 1];
      std::set<int32_t> expected;
      for (int32_t i = 0; i < n; ++i) {
        if (row[i] >= kth) expected.insert(i);
      }
      std::vector<Candidate> out;
      CollectTopK(row.data(), n, k, out);
      std::set<int32_t> got;
      for (const Candidate& c : out) {
        got.insert(c.token);
        EXPECT_EQ(c.weight, row[c.token]);
      }
      EXPECT_EQ(got, expected) << "seed=" << seed << " k=" << k;
    }
  }
}

TEST(RowSelectTest, TopPMatchesVllmAscendingCumsumMask) {
  // Reference: vLLM's formulation. Sort ascending, cumsum the normalised probs,
  // drop every entry whose cumsum <= 1 - p, but never the largest one.
  for (uint32_t seed = 0; seed < 60; ++seed) {
    const int32_t n = 3 + static_cast<int32_t>(seed % 30);
    std::vector<float> w = RandomRow(n, seed + 100, /*coarse=*/false);
    for (float& v : w) v = std::exp(v * 0.5f);
    double total = 0.0;
    for (float v : w) total += v;
    for (double p : {0.05, 0.3, 0.5, 0.9, 0.999, 1.0}) {
      std::vector<int32_t> ascending(n);
      for (int32_t i = 0; i < n; ++i) ascending[i] = i;
      std::sort(ascending.begin(), ascending.end(), [&](int32_t a, int32_t b) {
        return w[a] != w[b] ? w[a] < w[b] : a > b;
      });
      std::set<int32_t> expected;
      double cumsum = 0.0;
      for (int32_t j = 0; j < n; ++j) {
        cumsum += w[ascending[j]] / total;
        if (cumsum > 1.0 - p || j == n - 1) expected.insert(ascending[j]);
      }
      std::vector<Candidate> cands;
      for (int32_t i = 0; i < n; ++i) cands.push_back({w[i], i});
      KeepTopP(cands, p, total);
      std::set<int32_t> got;
      for (const Candidate& c : cands) got.insert(c.token);
      EXPECT_EQ(got, expected) << "seed=" << seed << " p=" << p;
      for (size_t i = 1; i < cands.size(); ++i) EXPECT_GE(cands[i - 1].weight, cands[i].weight);
    }
  }
}

TEST(RowSelectTest, TopPAlwaysKeepsAtLeastOne) {
  std::vector<Candidate> cands = {{0.9f, 3}, {0.1f, 1}};
  KeepTopP(cands, 1e-9, 1.0);
  ASSERT_EQ(cands.size(), 1u);
  EXPECT_EQ(cands[0].token, 3);
}

}  // namespace
}  // namespace pagellm
