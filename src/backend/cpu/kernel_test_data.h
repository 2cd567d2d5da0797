// Shared by the CPU kernel tests (int8_gemm_test, q8_0_packed_test, bf16_packed_test,
// kquant_packed_test): seeded normal floats, their llama.cpp q8_0 blocks, a bit-for-bit
// comparison, and a stacked linear checked against its parts.
//
//   std::vector<float> w = RandomFloats(n * k, /*seed=*/7, /*scale=*/0.1f);
//   std::vector<BlockQ8_0> blocks = QuantizeWeights(w, n, k);
//   ExpectBitEqual(kernel_output, oracle_output, "M=4 avx2");
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/int8_quant.h"

namespace pagellm::testing {

inline std::vector<float> RandomFloats(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// w [n, k] row-major, k % 32 == 0 -> block_q8_0 [n, k / 32].
inline std::vector<BlockQ8_0> QuantizeWeights(const std::vector<float>& w, int64_t n, int64_t k) {
  std::vector<BlockQ8_0> q(static_cast<size_t>(n * k / 32));
  for (int64_t r = 0; r < n; ++r) QuantizeRowQ8_0(w.data() + r * k, k, q.data() + r * (k / 32));
  return q;
}

// Fails (naming `what`, the index and both values; at most 5 reports) unless every
// float has the same bits.
inline void ExpectBitEqual(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      ADD_FAILURE() << what << " at " << i << ": " << got[i] << " vs " << want[i];
      ++bad;
    }
  }
}

// `stacked` (be.PrepareStackedLinear of weights [n_i, k], with biases, or empty views for
// none) against each part prepared alone, at GEMV and GEMM row counts (M = 1, 3, 7, 33):
// every part's columns bit for bit, and nothing written past a part's output.
inline void ExpectStackedEqualsParts(CpuBackend& be, const LinearWeight& stacked, const std::vector<TensorView>& weights,
                                     const std::vector<TensorView>& biases, int64_t k, uint32_t seed,
                                     const std::string& what) {
  for (int64_t m : {1, 3, 7, 33}) {
    const std::vector<float> x = RandomFloats(static_cast<size_t>(m * k), seed++, 1.0f);
    std::vector<std::vector<float>> got(weights.size());
    std::vector<float*> ys;
    for (size_t i = 0; i < weights.size(); ++i) {
      got[i].assign(static_cast<size_t>(m * weights[i].dim(0) + 16), -7.25f);
      ys.push_back(got[i].data());
    }
    be.LinearStacked(stacked, x.data(), m, ys);
    for (size_t i = 0; i < weights.size(); ++i) {
      auto alone = be.PrepareLinear(weights[i], biases[i]);
      ASSERT_TRUE(alone.ok());
      std::vector<float> want(static_cast<size_t>(m * weights[i].dim(0)));
      be.Linear(**alone, x.data(), m, want.data());
      for (size_t j = want.size(); j < got[i].size(); ++j) ASSERT_EQ(got[i][j], -7.25f) << "write past part " << i;
      got[i].resize(want.size());
      ExpectBitEqual(got[i], want, what + " part " + std::to_string(i) + " m " + std::to_string(m));
    }
  }
}

// be stacks weights (the last of at least two not whole 16-row strips) without and with
// biases, each as ExpectStackedEqualsParts checks; and refuses (null) the last part put
// first, where a strip would span two outputs.
inline void ExpectStacksAsItsParts(CpuBackend& be, const std::vector<TensorView>& weights,
                                   const std::vector<TensorView>& biases, int64_t k, uint32_t seed) {
  const std::vector<TensorView> no_biases(weights.size());
  for (bool with_bias : {false, true}) {
    auto stacked = be.PrepareStackedLinear(weights, with_bias ? biases : no_biases);
    ASSERT_TRUE(stacked.ok()) << stacked.status().ToString();
    ASSERT_NE(*stacked, nullptr);
    ExpectStackedEqualsParts(be, **stacked, weights, with_bias ? biases : no_biases, k, seed++,
                             with_bias ? "bias" : "no bias");
  }
  const TensorView uneven[] = {weights.back(), weights.front()};
  const TensorView two_biases[2] = {};
  auto refused = be.PrepareStackedLinear(uneven, two_biases);
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(*refused, nullptr);
}

}  // namespace pagellm::testing
