#include "runner/sampling_filters.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <vector>

namespace pagellm {
namespace {

// Brute-force reference in double, written the way vLLM's tensor code reads:
// softmax -> min_p mask -> top-k mask (>= k-th largest survivor) -> ascending
// cumsum top-p mask (drop cumsum <= 1 - p, never the largest).
std::set<int32_t> ReferenceKept(const std::vector<float>& logits, float temperature,
                                const FilterSpec& spec) {
  const int32_t n = static_cast<int32_t>(logits.size());
  std::vector<double> z(n);
  for (int32_t i = 0; i < n; ++i) z[i] = static_cast<double>(logits[i] / temperature);
  const double z_max = *std::max_element(z.begin(), z.end());
  std::vector<int32_t> alive;
  for (int32_t i = 0; i < n; ++i) {
    if (spec.min_p <= 0.0f || std::exp(z[i] - z_max) >= spec.min_p) alive.push_back(i);
  }
  if (spec.top_k > 0 && spec.top_k < static_cast<int32_t>(alive.size())) {
    std::vector<double> values;
    for (int32_t i : alive) values.push_back(z[i]);
    std::sort(values.begin(), values.end(), std::greater<double>());
    const double kth = values[spec.top_k - 1];
    std::erase_if(alive, [&](int32_t i) { return z[i] < kth; });
  }
  double total = 0.0;
  for (int32_t i : alive) total += std::exp(z[i] - z_max);
  std::sort(alive.begin(), alive.end(), [&](int32_t a, int32_t b) {
    return z[a] != z[b] ? z[a] < z[b] : a > b;
  });
  std::set<int32_t> kept;
  double cumsum = 0.0;
  for (size_t j = 0; j < alive.size(); ++j) {
    cumsum += std::exp(z[alive[j]] - z_max) / total;
    if (spec.top_p >= 1.0 || cumsum > 1.0 - spec.top_p || j + 1 == alive.size()) {
      kept.insert(alive[j]);
    }
  }
  return kept;
}

std::set<int32_t> Kept(const std::vector<float>& logits, float temperature,
                       const FilterSpec& spec) {
  const int32_t n = static_cast<int32_t>(logits.size());
  std::vector<float> weights(n, -1.0f);
  std::vector<Candidate> cands;
  const FilterResult result =
      FilterCandidates(logits.data(), n, temperature, spec, weights.data(), cands);
  std::set<int32_t> kept;
  double sum = 0.0;
  if (result.dense) {
    for (int32_t i = 0; i < n; ++i) {
      EXPECT_GE(weights[i], 0.0f);
      if (weights[i] > 0.0f) kept.insert(i);
      sum += weights[i];
    }
  } else {
    for (const Candidate& c : cands) {
      EXPECT_GT(c.weight, 0.0f);
      kept.insert(c.token);
      sum += c.weight;
    }
  }
  EXPECT_NEAR(sum, result.total_weight, 1e-9 * std::max(1.0, sum));
  return kept;
}

std::vector<float> RandomLogits(int32_t n, uint32_t seed, float stddev) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<float> logits(n);
  for (float& v : logits) v = dist(gen);
  return logits;
}

TEST(SamplingFiltersTest, SmallVocabMatchesBruteForceForAllCombinations) {
  const FilterSpec specs[] = {
      {0, 1.0, 0.0f},  {1, 1.0, 0.0f},  {3, 1.0, 0.0f},   {0, 0.5, 0.0f},
      {0, 0.9, 0.0f},  {0, 1.0, 0.1f},  {0, 1.0, 0.5f},   {5, 0.8, 0.0f},
      {4, 0.7, 0.05f}, {0, 0.6, 0.02f}, {50, 0.95, 0.0f}, {2, 0.01, 0.9f},
  };
  for (uint32_t seed = 0; seed < 40; ++seed) {
    const std::vector<float> logits = RandomLogits(8 + seed % 17, seed, 2.0f);
    for (float temperature : {0.5f, 1.0f, 1.7f}) {
      for (const FilterSpec& spec : specs) {
        EXPECT_EQ(Kept(logits, temperature, spec), ReferenceKept(logits, temperature, spec))
            << "seed=" << seed << " T=" << temperature << " k=" << spec.top_k
            << " p=" << spec.top_p << " min_p=" << spec.min_p;
      }
    }
  }
}

TEST(SamplingFiltersTest, LargeVocabTopPMatchesBruteForceFromFlatToPeaky) {
  // Flat rows put the nucleus boundary in a crowded binade; peaky ones in a sparse one.
  for (float stddev : {0.3f, 1.0f, 2.5f, 6.0f}) {
    const std::vector<float> logits = RandomLogits(5000, 7 + static_cast<uint32_t>(stddev), stddev);
    for (double top_p : {0.5, 0.95, 0.999999}) {
      const FilterSpec spec{0, top_p, 0.0f};
      EXPECT_EQ(Kept(logits, 1.0f, spec), ReferenceKept(logits, 1.0f, spec))
          << "stddev=" << stddev << " p=" << top_p;
    }
  }
}

TEST(SamplingFiltersTest, TopKOneKeepsOnlyTheArgmax) {
  const std::vector<float> logits = {0.5f, 3.0f, 3.0f, -1.0f};
  // Ties at the k-th value are all kept (vLLM's mask semantics).
  EXPECT_EQ(Kept(logits, 1.0f, {1, 1.0, 0.0f}), (std::set<int32_t>{1, 2}));
  const std::vector<float> unique = {0.5f, 3.0f, 2.9f, -1.0f};
  EXPECT_EQ(Kept(unique, 1.0f, {1, 1.0, 0.0f}), (std::set<int32_t>{1}));
}

TEST(SamplingFiltersTest, DrawWalksCumulativeWeights) {
  const std::vector<float> w = {0.0f, 1.0f, 0.0f, 3.0f};
  EXPECT_EQ(DrawDense(w.data(), 4, 4.0, 0.0), 1);
  EXPECT_EQ(DrawDense(w.data(), 4, 4.0, 0.2499), 1);
  EXPECT_EQ(DrawDense(w.data(), 4, 4.0, 0.25), 3);
  EXPECT_EQ(DrawDense(w.data(), 4, 4.0, 0.9999), 3);
  const std::vector<float> zero = {0.0f, 0.0f};
  EXPECT_EQ(DrawDense(zero.data(), 2, 0.0, 0.5), -1);
  const std::vector<Candidate> cands = {{3.0f, 9}, {1.0f, 4}};
  EXPECT_EQ(DrawCandidates(cands, 0.74), 9);
  EXPECT_EQ(DrawCandidates(cands, 0.76), 4);
}

}  // namespace
}  // namespace pagellm
