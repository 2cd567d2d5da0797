// The quantizers through QuantizeRow -> Dequantize: error bounds on weight-like rows, exact
// reconstruction of values on a type's grid, and edge cases (zero and constant blocks, zero
// sub-blocks, huge, tiny and one-signed values). Byte identity with llama.cpp's quantizers is
// checked by the gguf_quantizers_match_libggml test (tests/gguf/check_quantizers_with_libggml.py).
#include "gguf/gguf_quantize.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "gguf/gguf_quants.h"
#include "tensor/half.h"
#include "tensor/kquant_blocks.h"

namespace pagellm {
namespace {

const GgmlType kQuantTypes[] = {GgmlType::kQ4_0, GgmlType::kQ5_0,  GgmlType::kQ4_1,  GgmlType::kQ5_1,
                                GgmlType::kQ8_0, GgmlType::kQ4_K,  GgmlType::kQ5_K,  GgmlType::kQ6_K,
                                GgmlType::kIQ4_NL, GgmlType::kIQ4_XS};

std::vector<std::byte> Quantize(GgmlType type, const std::vector<float>& x) {
  std::vector<std::byte> q(GgmlRowBytes(type, static_cast<int64_t>(x.size())));
  QuantizeRow(type, x.data(), static_cast<int64_t>(x.size()), q.data());
  return q;
}

std::vector<float> RoundTrip(GgmlType type, const std::vector<float>& x) {
  std::vector<std::byte> q = Quantize(type, x);
  std::vector<float> y(x.size());
  Status s = Dequantize(type, q, static_cast<int64_t>(x.size()), y.data());
  EXPECT_TRUE(s.ok()) << s;
  return y;
}

double RelRmse(const std::vector<float>& x, const std::vector<float>& y) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    err += (static_cast<double>(y[i]) - x[i]) * (static_cast<double>(y[i]) - x[i]);
    ref += static_cast<double>(x[i]) * x[i];
  }
  return std::sqrt(err / ref);
}

std::vector<float> Gaussian(size_t n, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
  return x;
}

// Relative RMSE bounds on gaussian rows, ~1.25x what llama.cpp's quantizers (same bytes)
// give on 16 x 4096 numpy gaussians through libggml: q4_0 0.087, q5_0 0.043, q5_1 0.038,
// q8_0 0.0054, q4_K 0.072, q5_K 0.036, q6_K 0.018, iq4_nl 0.076, iq4_xs 0.077 (q4_1: 0.076 on
// check_with_libggml.py's rows).
double RmseBound(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_0: return 0.11;
    case GgmlType::kQ5_0: return 0.054;
    case GgmlType::kQ4_1: return 0.095;
    case GgmlType::kQ5_1: return 0.048;
    case GgmlType::kQ8_0: return 0.0068;
    case GgmlType::kQ4_K: return 0.09;
    case GgmlType::kQ5_K: return 0.045;
    case GgmlType::kQ6_K: return 0.023;
    default: return 0.096;  // IQ4_NL, IQ4_XS
  }
}

TEST(GgufQuantizeTest, GaussianRowsWithinTheTypesError) {
  for (GgmlType type : kQuantTypes) {
    for (float scale : {0.02f, 1.0f}) {
      std::vector<float> x = Gaussian(4096, scale, 5);
      const double rel = RelRmse(x, RoundTrip(type, x));
      EXPECT_LT(rel, RmseBound(type)) << GgmlTypeName(type) << " scale " << scale;
      EXPECT_GT(rel, RmseBound(type) / 4) << GgmlTypeName(type) << ": suspiciously exact";
    }
  }
}

TEST(GgufQuantizeTest, AllZeroBlocksDecodeToZero) {
  for (GgmlType type : kQuantTypes) {
    std::vector<float> y = RoundTrip(type, std::vector<float>(512, 0.0f));
    for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], 0.0f) << GgmlTypeName(type) << " " << i;
  }
}

TEST(GgufQuantizeTest, ZeroSubBlocksInsideABlockStayZero) {
  for (GgmlType type : kQuantTypes) {
    std::vector<float> x = Gaussian(512, 1.0f, 9);
    for (int i = 32; i < 64; ++i) x[static_cast<size_t>(i)] = 0.0f;   // a 32-wide sub-block
    for (int i = 272; i < 288; ++i) x[static_cast<size_t>(i)] = 0.0f;  // a 16-wide one (Q6_K)
    std::vector<float> y = RoundTrip(type, x);
    EXPECT_LT(RelRmse(x, y), RmseBound(type) * 1.1) << GgmlTypeName(type);
    // Symmetric types put 0 exactly on a code; Q4_K/Q5_K/Q5_1 get within one step of 0.
    for (int i = 32; i < 64; ++i) EXPECT_NEAR(y[static_cast<size_t>(i)], 0.0f, 0.5f) << GgmlTypeName(type) << " " << i;
  }
}

TEST(GgufQuantizeTest, ConstantBlocks) {
  for (GgmlType type : kQuantTypes) {
    for (float c : {0.25f, -3.0f}) {
      std::vector<float> y = RoundTrip(type, std::vector<float>(256, c));
      for (size_t i = 0; i < y.size(); ++i) {
        ASSERT_NEAR(y[i], c, std::fabs(c) * 0.02f) << GgmlTypeName(type) << " " << c << " at " << i;
      }
    }
  }
  // Q4_0 / Q5_0 / Q4_1 / Q5_1 hit a constant that fp16 holds exactly: it is the code-0 value
  // d * -8 (d * -16) with d = c / -8 (c / -16) exact, or Q4_1's / Q5_1's offset m. (Q8_0's
  // d = c / 127 is not.)
  for (GgmlType type : {GgmlType::kQ4_0, GgmlType::kQ5_0, GgmlType::kQ4_1, GgmlType::kQ5_1}) {
    std::vector<float> y = RoundTrip(type, std::vector<float>(64, 0.25f));
    for (float v : y) ASSERT_EQ(v, 0.25f) << GgmlTypeName(type);
  }
}

TEST(GgufQuantizeTest, OneSignedAndHugeAndTinyRows) {
  for (GgmlType type : kQuantTypes) {
    std::vector<float> base = Gaussian(1024, 1.0f, 13);
    std::vector<float> pos(base), neg(base), huge(base), small(base);
    for (size_t i = 0; i < base.size(); ++i) {
      pos[i] = std::fabs(base[i]);
      neg[i] = -std::fabs(base[i]);
      huge[i] = base[i] * 6000.0f;  // |x| up to ~25000: every scale still fits fp16
      small[i] = base[i] * 1e-3f;
    }
    // One-signed rows lose the sign-symmetric slack: at most ~1.5x the gaussian error.
    EXPECT_LT(RelRmse(pos, RoundTrip(type, pos)), RmseBound(type) * 1.5) << GgmlTypeName(type);
    EXPECT_LT(RelRmse(neg, RoundTrip(type, neg)), RmseBound(type) * 1.5) << GgmlTypeName(type);
    EXPECT_LT(RelRmse(huge, RoundTrip(type, huge)), RmseBound(type)) << GgmlTypeName(type);
    EXPECT_LT(RelRmse(small, RoundTrip(type, small)), RmseBound(type)) << GgmlTypeName(type);
    // |x| ~ 1e-6: the fp16 scales become subnormal or underflow to 0 (as in llama.cpp), so
    // only "finite and no larger than the data" holds.
    std::vector<float> tiny(base);
    float amax = 0;
    for (float& v : tiny) {
      v *= 1e-6f;
      amax = std::max(amax, std::fabs(v));
    }
    std::vector<float> y = RoundTrip(type, tiny);
    for (size_t i = 0; i < y.size(); ++i) {
      ASSERT_TRUE(std::isfinite(y[i])) << GgmlTypeName(type);
      ASSERT_LE(std::fabs(y[i]), 2 * amax) << GgmlTypeName(type) << " " << i;
    }
  }
}

// Values on a type's own grid come back exactly.
TEST(GgufQuantizeTest, GridValuesAreExact) {
  std::vector<float> x4(32), x5(32);
  for (int j = 0; j < 32; ++j) {
    x4[static_cast<size_t>(j)] = 0.5f * static_cast<float>(j % 16 - 8);  // d = 0.5, codes j % 16
    x5[static_cast<size_t>(j)] = 0.25f * static_cast<float>(j - 16);     // d = 0.25, codes j
  }
  EXPECT_EQ(RoundTrip(GgmlType::kQ4_0, x4), x4);
  EXPECT_EQ(RoundTrip(GgmlType::kQ5_0, x5), x5);
  std::vector<std::byte> q = Quantize(GgmlType::kQ4_0, x4);
  const auto* b = reinterpret_cast<const BlockQ4_0*>(q.data());
  EXPECT_EQ(F16ToF32(b->d), 0.5f);  // max = -4 (the first of largest magnitude) -> d = max / -8
  for (int j = 0; j < 32; ++j) EXPECT_EQ(Q4_0Code(*b, j), j % 16) << j;
  // IQ4_NL: levels times 0.01 keep their codes; d is the least-squares 0.01 in fp16.
  std::vector<float> levels(32);
  for (int j = 0; j < 32; ++j) levels[static_cast<size_t>(j)] = 0.01f * kIq4NlValues[j % 16];
  q = Quantize(GgmlType::kIQ4_NL, levels);
  const auto* nl = reinterpret_cast<const BlockIq4Nl*>(q.data());
  EXPECT_EQ(nl->d, F32ToF16(0.01f));
  for (int j = 0; j < 32; ++j) EXPECT_EQ(Q4_0Code(*nl, j), j % 16) << j;
}

// Q4_K / Q5_K codes the 8 sub-block scales in 6 bits against the largest: the sub-block with
// the largest range gets scale code 63.
TEST(GgufQuantizeTest, KQuantLargestSubBlockGetsTopScale) {
  std::vector<float> x = Gaussian(256, 0.1f, 17);
  for (int i = 96; i < 128; ++i) x[static_cast<size_t>(i)] *= 10.0f;  // sub-block 3
  std::vector<std::byte> q = Quantize(GgmlType::kQ4_K, x);
  const auto* b = reinterpret_cast<const BlockQ4_K*>(q.data());
  uint8_t sc, m;
  GetScaleMinK4(3, b->scales, &sc, &m);
  EXPECT_EQ(sc, 63);
  for (int j = 0; j < 8; ++j) {
    GetScaleMinK4(j, b->scales, &sc, &m);
    if (j != 3) {
      EXPECT_LT(sc, 20) << j;
    }
  }
  q = Quantize(GgmlType::kQ6_K, x);
  const auto* b6 = reinterpret_cast<const BlockQ6_K*>(q.data());
  int max_abs = 0;
  for (int j = 0; j < 16; ++j) max_abs = std::max(max_abs, std::abs(static_cast<int>(b6->scales[j])));
  EXPECT_GE(max_abs, 127);  // the largest sub-block scale codes as +-127 / -128
}

TEST(GgufQuantizeTest, RoundToFloatTypeIsWhatTheFileStores) {
  std::vector<float> x = {1.0f + 1.0f / 4096, 65519.0f, 1e-8f, -0.1f};
  std::vector<float> f16 = x, bf16 = x, f32 = x;
  RoundToFloatType(GgmlType::kF16, f16.data(), 4);
  RoundToFloatType(GgmlType::kBF16, bf16.data(), 4);
  RoundToFloatType(GgmlType::kF32, f32.data(), 4);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(f16[i], F16ToF32(F32ToF16(x[i])));
    EXPECT_EQ(bf16[i], Bf16ToF32(F32ToBf16(x[i])));
    EXPECT_EQ(f32[i], x[i]);
  }
  EXPECT_EQ(f16[0], 1.0f);  // ties to even
}

}  // namespace
}  // namespace pagellm
