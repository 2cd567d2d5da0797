// Shared by the CPU kernel tests (int8_gemm_test, q8_0_packed_test, bf16_packed_test):
// seeded normal floats, their llama.cpp q8_0 blocks, and a bit-for-bit comparison.
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

}  // namespace pagellm::testing
