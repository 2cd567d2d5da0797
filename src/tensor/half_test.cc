#include "tensor/half.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>
#include <immintrin.h>

namespace pagellm {
namespace {

TEST(HalfTest, Bf16RoundsToNearestEven) {
  EXPECT_EQ(F32ToBf16(1.0f), 0x3f80);
  EXPECT_EQ(Bf16ToF32(0x3f80), 1.0f);
  // 1 + 2^-8 is exactly halfway between bf16 1.0 and 1.0078125: ties to even (1.0).
  EXPECT_EQ(F32ToBf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(F32ToBf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(Bf16ToF32(F32ToBf16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(HalfTest, F16RoundTripsEveryValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    uint16_t v = static_cast<uint16_t>(h);
    float f = F16ToF32(v);
    if (std::isnan(f)) continue;
    EXPECT_EQ(F32ToF16(f), v) << "h=" << h;
  }
}

TEST(HalfTest, F16MatchesHardwareConversion) {
  // _cvtss_sh is IEEE round-to-nearest-even; the baseline build has F16C.
  for (float f : {0.1f, -3.14159f, 65504.0f, 70000.0f, 1e-6f, 6e-8f, 3e-8f, -0.0f, 2.98e-8f}) {
    EXPECT_EQ(F32ToF16(f), _cvtss_sh(f, 0)) << f;
  }
}

}  // namespace
}  // namespace pagellm
