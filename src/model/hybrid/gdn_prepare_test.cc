// GDN pre/post-processing against hand-written formulas: q/k l2norm + scale, beta and g
// (incl. the softplus threshold), the gated RMSNorm, and Qwen3-Next un-grouping.
#include "model/hybrid/gdn_prepare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/hybrid/gdn_gated_norm.h"
#include "model/hybrid/gdn_test_util.h"
#include "model/hybrid/qwen3_next_layout.h"

namespace pagellm {
namespace {

const GdnDims kDims{.num_k_heads = 2, .num_v_heads = 4, .k_head_dim = 16, .v_head_dim = 32};

TEST(GdnPrepareTest, NormalizeQkScalesQAndKOnlyAndLeavesV) {
  const int64_t len = 3, c = kDims.conv_dim();
  const auto orig = RandomUniform(len * c, 1, -3.0f, 3.0f);
  auto x = orig;
  GdnNormalizeQk(kDims, len, x.data());
  for (int64_t t = 0; t < len; ++t) {
    for (int64_t h = 0; h < 4; ++h) {  // q0 q1 k0 k1
      double sum = 0.0;
      for (int64_t i = 0; i < 16; ++i) sum += double(orig[t * c + h * 16 + i]) * orig[t * c + h * 16 + i];
      const double f = (h < 2 ? 0.25 : 1.0) / std::sqrt(sum + 1e-6);  // dk^-0.5 = 1/4
      for (int64_t i = 0; i < 16; ++i) EXPECT_NEAR(x[t * c + h * 16 + i], orig[t * c + h * 16 + i] * f, 1e-6);
    }
    for (int64_t i = 64; i < c; ++i) EXPECT_EQ(x[t * c + i], orig[t * c + i]);
  }
}

TEST(GdnPrepareTest, GatesMatchFormulaIncludingSoftplusThreshold) {
  const std::vector<float> b{-2.0f, 0.0f, 3.0f, 0.5f}, a{-1.0f, 0.3f, 25.0f, 19.0f};
  const std::vector<float> a_log{0.1f, -0.5f, 1.0f, 0.0f}, dt_bias{0.2f, 0.0f, -1.0f, 2.0f};
  std::vector<float> beta(4), g(4);
  GdnComputeGates(kDims, 1, b.data(), a.data(), a_log.data(), dt_bias.data(), beta.data(), g.data());
  for (int h = 0; h < 4; ++h) {
    const double u = double(a[h]) + dt_bias[h];
    const double sp = u > 20.0 ? u : std::log(1.0 + std::exp(u));
    EXPECT_NEAR(beta[h], 1.0 / (1.0 + std::exp(-double(b[h]))), 1e-6) << h;
    EXPECT_NEAR(g[h], -std::exp(double(a_log[h])) * sp, 1e-5 * std::fabs(g[h]) + 1e-6) << h;
    EXPECT_LE(g[h], 0.0f);
  }
  EXPECT_FLOAT_EQ(g[2], -std::exp(1.0f) * 24.0f);  // u = 24 > 20: softplus(u) = u exactly
}

TEST(GdnPrepareTest, GatedRmsNormUsesPlainWeightAndSiluGate) {
  const int64_t len = 2, dv = kDims.v_head_dim, n = len * kDims.value_dim();
  const auto o = RandomUniform(n, 2, -2.0f, 2.0f), z = RandomUniform(n, 3, -3.0f, 3.0f);
  const auto w = RandomUniform(dv, 4, 0.5f, 1.5f);
  std::vector<float> y(n);
  GdnGatedRmsNorm(kDims, len, o.data(), z.data(), w.data(), 1e-6f, y.data());
  for (int64_t r = 0; r < len * kDims.num_v_heads; ++r) {
    double ms = 0.0;
    for (int64_t i = 0; i < dv; ++i) ms += double(o[r * dv + i]) * o[r * dv + i];
    const double inv = 1.0 / std::sqrt(ms / dv + 1e-6);
    for (int64_t i = 0; i < dv; ++i) {
      const double zz = z[r * dv + i];
      EXPECT_NEAR(y[r * dv + i], w[i] * o[r * dv + i] * inv * zz / (1.0 + std::exp(-zz)), 1e-5);
    }
  }
  std::vector<float> in_place = o;  // y may alias o
  GdnGatedRmsNorm(kDims, len, in_place.data(), z.data(), w.data(), 1e-6f, in_place.data());
  EXPECT_EQ(in_place, y);
}

TEST(GdnPrepareTest, Qwen3NextUngroupingFollowsSpecLayout) {
  // Label every grouped element by (part, head, index) and check where it lands.
  const GdnDims d{.num_k_heads = 2, .num_v_heads = 6, .k_head_dim = 16, .v_head_dim = 16};  // r = 3
  const int64_t dk = 16, dv = 16, r = 3, group = 2 * dk + 2 * r * dv;
  std::vector<float> grouped(2 * group);
  for (int64_t g = 0; g < 2; ++g) {
    for (int64_t i = 0; i < group; ++i) {
      // part code: q 0, k 1, v 2, z 3; value: part*10000 + head*100 + dim
      int64_t part, head, dim;
      if (i < dk) { part = 0; head = g; dim = i; }
      else if (i < 2 * dk) { part = 1; head = g; dim = i - dk; }
      else if (i < 2 * dk + r * dv) { part = 2; head = g * r + (i - 2 * dk) / dv; dim = (i - 2 * dk) % dv; }
      else { part = 3; head = g * r + (i - 2 * dk - r * dv) / dv; dim = (i - 2 * dk - r * dv) % dv; }
      grouped[g * group + i] = float(part * 10000 + head * 100 + dim);
    }
  }
  const auto src = Qwen3NextQkvzSourceIndex(d);
  ASSERT_EQ(static_cast<int64_t>(src.size()), d.conv_dim() + d.value_dim());
  std::vector<float> flat(src.size());
  GatherColumns(grouped.data(), 1, src, flat.data());
  int64_t f = 0;
  for (int64_t part = 0; part < 4; ++part) {
    const int64_t heads = part < 2 ? 2 : 6, hd = part < 2 ? dk : dv;
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < hd; ++i, ++f) ASSERT_EQ(flat[f], float(part * 10000 + h * 100 + i)) << f;
  }
  // ba: per group [b_{g*r..g*r+r-1} | a_{g*r..}] -> [b_0..b_5 | a_0..a_5]
  std::vector<float> ba{0, 1, 2, 100, 101, 102, 3, 4, 5, 103, 104, 105}, flat_ba(12);
  GatherColumns(ba.data(), 1, Qwen3NextBaSourceIndex(d), flat_ba.data());
  EXPECT_EQ(flat_ba, (std::vector<float>{0, 1, 2, 3, 4, 5, 100, 101, 102, 103, 104, 105}));
}

}  // namespace
}  // namespace pagellm
