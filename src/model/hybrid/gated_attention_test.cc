// Gated attention pieces against hand-written references, plus the Backend ops the layer
// relies on: RmsNorm with a folded 1 + w weight and partial NeoX RoPE (64 of 256 dims).
#include "model/hybrid/gated_attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/reference/reference_backend.h"
#include "backend/rope_table.h"
#include "model/hybrid/gdn_test_util.h"

namespace pagellm {
namespace {

TEST(GatedAttentionTest, SplitIsInterleavedPerHead) {
  // T=2, nh=3, hd=2: qg row = [q_h0 | g_h0 | q_h1 | g_h1 | q_h2 | g_h2].
  std::vector<float> qg(2 * 3 * 4);
  for (size_t i = 0; i < qg.size(); ++i) qg[i] = float(i);
  std::vector<float> q(12), gate(12);
  SplitQueryGate(qg.data(), 2, 3, 2, q.data(), gate.data());
  EXPECT_EQ(q, (std::vector<float>{0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21}));
  EXPECT_EQ(gate, (std::vector<float>{2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23}));
}

TEST(GatedAttentionTest, ZeroCenteredNormUsesOnePlusWeight) {
  const int64_t rows = 3, dim = 256;
  const auto x = RandomUniform(rows * dim, 1, -4.0f, 4.0f);
  const auto w = RandomUniform(dim, 2, -0.5f, 0.5f);  // stored around 0, may be negative
  std::vector<float> y(rows * dim);
  ZeroCenteredRmsNorm(x.data(), w.data(), rows, dim, 1e-6f, y.data());
  for (int64_t r = 0; r < rows; ++r) {
    double ms = 0.0;
    for (int64_t i = 0; i < dim; ++i) ms += double(x[r * dim + i]) * x[r * dim + i];
    const double inv = 1.0 / std::sqrt(ms / dim + 1e-6);
    for (int64_t i = 0; i < dim; ++i) EXPECT_NEAR(y[r * dim + i], x[r * dim + i] * inv * (1.0 + w[i]), 2e-6);
  }
  // Folding 1 + w into the weight and using the backends' plain RmsNorm is equivalent.
  std::vector<float> folded(dim);
  FoldZeroCenteredWeight(w.data(), dim, folded.data());
  ReferenceBackend ref;
  CpuBackend cpu;
  for (Backend* be : std::initializer_list<Backend*>{&ref, &cpu}) {
    std::vector<float> yb(rows * dim);
    be->RmsNorm(x.data(), folded.data(), rows, dim, 1e-6f, yb.data());
    EXPECT_LE(MaxAbsDiff(yb, y), 1e-5f) << be->name();
  }
}

TEST(GatedAttentionTest, BackendRopeIsPartialNeoxOverFirst64Of256) {
  const int64_t tokens = 3, heads = 2, hd = 256, rot = 64, half = rot / 2;
  const double theta = 1e7;
  RopeParams params;
  params.rotary_dim = rot;
  params.theta = theta;
  params.max_positions = 1024;
  auto table = BuildRopeTable(params);
  ASSERT_TRUE(table.ok()) << table.status();
  const std::vector<int32_t> positions{0, 5, 777};
  const auto x = RandomUniform(tokens * heads * hd, 3, -1.0f, 1.0f);
  ReferenceBackend ref;
  CpuBackend cpu;
  for (Backend* be : std::initializer_list<Backend*>{&ref, &cpu}) {
    auto y = x;
    be->Rope(*table, positions, heads, hd, y.data());
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t h = 0; h < heads; ++h) {
        const float* xi = x.data() + (t * heads + h) * hd;
        const float* yi = y.data() + (t * heads + h) * hd;
        for (int64_t j = 0; j < half; ++j) {
          // inv_freq uses the rotary dim R = 64 in the exponent (§2.2, §7 pitfall 4).
          const float inv_freq = static_cast<float>(std::pow(theta, -2.0 * j / rot));
          const double ang = double(static_cast<float>(positions[t]) * inv_freq);
          const double c = std::cos(ang), s = std::sin(ang);
          EXPECT_NEAR(yi[j], xi[j] * c - xi[j + half] * s, 1e-5) << be->name() << " j=" << j;
          EXPECT_NEAR(yi[j + half], xi[j + half] * c + xi[j] * s, 1e-5) << be->name() << " j=" << j;
        }
        for (int64_t j = rot; j < hd; ++j) ASSERT_EQ(yi[j], xi[j]) << be->name() << " pass-through dim " << j;
      }
    }
  }
}

TEST(GatedAttentionTest, SigmoidGateMultipliesElementwise) {
  std::vector<float> gate{0.0f, 2.0f, -3.0f, 40.0f, -40.0f}, x{1.0f, 1.0f, 2.0f, 5.0f, 5.0f};
  ApplySigmoidGate(gate.data(), 5, x.data());
  EXPECT_FLOAT_EQ(x[0], 0.5f);
  EXPECT_NEAR(x[1], 1.0 / (1.0 + std::exp(-2.0)), 1e-7);
  EXPECT_NEAR(x[2], 2.0 / (1.0 + std::exp(3.0)), 1e-7);
  EXPECT_FLOAT_EQ(x[3], 5.0f);
  EXPECT_NEAR(x[4], 0.0f, 1e-16);
}

}  // namespace
}  // namespace pagellm
