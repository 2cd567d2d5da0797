// RoPE tables against hand-derived formulas (docs/qwen-architectures.md §2.2) and the
// relative-position property that makes RoPE work.
#include "backend/rope_table.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backend/reference/reference_backend.h"

namespace pagellm {
namespace {

TEST(RopeTable, PlainAndLinearInvFreq) {
  RopeParams p{.rotary_dim = 128, .theta = 1e6, .max_positions = 10};
  auto plain = ComputeRopeInvFreq(p);
  ASSERT_TRUE(plain.ok());
  for (int j = 0; j < 64; ++j) EXPECT_NEAR((*plain)[j], std::pow(1e6, -2.0 * j / 128), 1e-7 * std::pow(1e6, -2.0 * j / 128));
  p.scaling = RopeScalingKind::kLinear;
  p.factor = 4.0;
  auto linear = ComputeRopeInvFreq(p);
  for (int j = 0; j < 64; ++j) EXPECT_FLOAT_EQ((*linear)[j], (*plain)[j] / 4.0f);
}

TEST(RopeTable, DynamicUsesVllmStaticBase) {
  RopeParams p{.rotary_dim = 64, .theta = 10000, .scaling = RopeScalingKind::kDynamic, .factor = 2.0,
               .original_max_positions = 4096, .max_positions = 10};
  auto inv = ComputeRopeInvFreq(p);
  ASSERT_TRUE(inv.ok());
  // L = 4096 * 2: base' = 1e4 * (2 * 2 - 1)^(64 / 62)
  double base = 1e4 * std::pow(3.0, 64.0 / 62.0);
  for (int j = 0; j < 32; ++j) EXPECT_NEAR((*inv)[j], std::pow(base, -2.0 * j / 64), 1e-6 * std::pow(base, -2.0 * j / 64));
}

TEST(RopeTable, YarnRampAndAttentionScaling) {
  // R=128, theta=1e6, orig=32768: corr(32) = 128 ln(32768 / (64 pi)) / (2 ln 1e6) = 23.6 -> low 23,
  // corr(1) = 128 ln(32768 / (2 pi)) / (2 ln 1e6) = 39.6 -> high 40 (computed by hand).
  RopeParams p{.rotary_dim = 128, .theta = 1e6, .scaling = RopeScalingKind::kYarn, .factor = 4.0,
               .original_max_positions = 32768, .max_positions = 8};
  auto inv = ComputeRopeInvFreq(p);
  ASSERT_TRUE(inv.ok());
  for (int j = 0; j < 64; ++j) {
    double base = std::pow(1e6, -2.0 * j / 128);
    double ramp = std::clamp((j - 23.0) / (40.0 - 23.0), 0.0, 1.0);
    double want = base / 4.0 * ramp + base * (1.0 - ramp);
    EXPECT_NEAR((*inv)[j], want, 1e-6 * base) << j;
  }
  EXPECT_NEAR(RopeAttentionScaling(p), 0.1 * std::log(4.0) + 1.0, 1e-6);
  auto table = BuildRopeTable(p);
  ASSERT_TRUE(table.ok());
  // cos^2 + sin^2 = attention_scaling^2 at every position.
  for (int64_t pos = 0; pos < 8; ++pos) {
    double c = table->cos_row(pos)[5], s = table->sin_row(pos)[5];
    EXPECT_NEAR(c * c + s * s, std::pow(0.1 * std::log(4.0) + 1.0, 2), 1e-5);
  }
  p.attention_factor = 1.0;
  EXPECT_FLOAT_EQ(RopeAttentionScaling(p), 1.0f);
}

TEST(RopeTable, RotationMatchesDirectFormulaAndIsRelative) {
  RopeParams p{.rotary_dim = 16, .theta = 10000, .max_positions = 512};
  auto table = BuildRopeTable(p);
  ASSERT_TRUE(table.ok());
  ReferenceBackend ref;
  std::mt19937 rng(3);
  std::normal_distribution<float> dist;
  std::vector<float> q(24), k(24);  // head_dim 24: dims 16..23 pass through (partial rotary)
  for (auto& x : q) x = dist(rng);
  for (auto& x : k) x = dist(rng);
  auto rotate = [&](std::vector<float> x, int32_t pos) {
    std::vector<int32_t> positions = {pos};
    ref.Rope(*table, positions, 1, 24, x.data());
    return x;
  };
  auto q300 = rotate(q, 300);
  for (int j = 0; j < 8; ++j) {
    double a = 300.0 * std::pow(10000.0, -2.0 * j / 16);
    EXPECT_NEAR(q300[j], q[j] * std::cos(a) - q[j + 8] * std::sin(a), 1e-4);
    EXPECT_NEAR(q300[j + 8], q[j + 8] * std::cos(a) + q[j] * std::sin(a), 1e-4);
  }
  for (int j = 16; j < 24; ++j) EXPECT_EQ(q300[j], q[j]);
  // <rope(q, m), rope(k, n)> depends only on m - n.
  auto dot = [](const std::vector<float>& a, const std::vector<float>& b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += double(a[i]) * b[i];
    return s;
  };
  EXPECT_NEAR(dot(rotate(q, 10), rotate(k, 3)), dot(rotate(q, 407), rotate(k, 400)), 1e-3);
  EXPECT_GT(std::abs(dot(rotate(q, 10), rotate(k, 3)) - dot(rotate(q, 10), rotate(k, 4))), 1e-3);
}

TEST(RopeTable, RejectsBadParams) {
  EXPECT_FALSE(BuildRopeTable({.rotary_dim = 7, .max_positions = 4}).ok());
  EXPECT_FALSE(BuildRopeTable({.rotary_dim = 8, .max_positions = 0}).ok());
  EXPECT_FALSE(BuildRopeTable({.rotary_dim = 8, .scaling = RopeScalingKind::kYarn, .factor = 4,
                               .max_positions = 4}).ok());  // no original_max_positions
  // Refused before the table is allocated (2^40 positions would fail the allocation).
  auto huge = BuildRopeTable({.rotary_dim = 128, .max_positions = int64_t{1} << 40});
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("1099511627776"), std::string::npos) << huge.status();
  EXPECT_TRUE(BuildRopeTable({.rotary_dim = 8, .max_positions = 4}).ok());
}

}  // namespace
}  // namespace pagellm
