#include "runner/vec_exp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace pagellm {
namespace {

TEST(VecExpTest, ExpWeightsMatchesDoubleExpWithinFewUlps) {
  std::vector<float> z;
  for (float x = -90.0f; x <= 0.0f; x += 0.0137f) z.push_back(x);
  z.push_back(-std::numeric_limits<float>::infinity());
  const int32_t n = static_cast<int32_t>(z.size());
  std::vector<float> out(n);
  const double total = ExpWeights(z.data(), n, 1.0f, 0.0f, 0.0f, out.data());
  double expected_total = 0.0;
  for (int32_t i = 0; i < n; ++i) {
    const double expected = z[i] < -87.3f ? 0.0 : std::exp(static_cast<double>(z[i]));
    expected_total += out[i];
    if (expected == 0.0) {
      EXPECT_EQ(out[i], 0.0f) << "z=" << z[i];
    } else {
      EXPECT_NEAR(out[i] / expected, 1.0, 4e-7) << "z=" << z[i];
    }
  }
  EXPECT_NEAR(total, expected_total, 1e-9 * expected_total);
}

TEST(VecExpTest, ExpWeightsAppliesTemperatureShiftAndMinWeight) {
  const std::vector<float> z = {2.0f, 1.0f, -3.0f, 0.5f, 2.0f, -10.0f, 0.0f, 1.5f, 1.9f};
  const float temperature = 0.5f, shift = 4.0f, min_weight = 0.01f;
  std::vector<float> out(z.size());
  ExpWeights(z.data(), static_cast<int32_t>(z.size()), temperature, shift, min_weight, out.data());
  for (size_t i = 0; i < z.size(); ++i) {
    const double expected = std::exp(static_cast<double>(z[i]) / temperature - shift);
    if (expected < min_weight) {
      EXPECT_EQ(out[i], 0.0f) << i;
    } else {
      EXPECT_NEAR(out[i], expected, 4e-7 * expected) << i;
    }
  }
}

TEST(VecExpTest, SumExpMatchesDouble) {
  std::vector<float> z(1001);
  for (size_t i = 0; i < z.size(); ++i) z[i] = std::sin(static_cast<float>(i)) * 20.0f;
  double expected = 0.0;
  for (float v : z) expected += std::exp(static_cast<double>(v) - 20.0);
  EXPECT_NEAR(SumExp(z.data(), 1001, 20.0f), expected, 4e-7 * expected);
}

}  // namespace
}  // namespace pagellm
