// Dequantization checked against blocks built by hand from the format's definition
// (what each field means), not from the decoder's loop structure. The bit-exact
// cross-check against llama.cpp's own gguf-py runs in the gguf_quants_match_gguf_py test.
#include "gguf/gguf_quants.h"

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "tensor/half.h"

namespace pagellm {
namespace {

void PutF16(float v, uint8_t* p) {
  uint16_t h = F32ToF16(v);
  std::memcpy(p, &h, 2);
}

std::vector<float> Decode(GgmlType type, const std::vector<uint8_t>& bytes, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  std::span<const std::byte> src(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size());
  Status s = Dequantize(type, src, n, out.data());
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

TEST(GgufQuantsTest, Q8_0IsScaleTimesInt8) {
  std::vector<uint8_t> b(34);
  PutF16(0.5f, b.data());
  for (int j = 0; j < 32; ++j) b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j * 8 - 128));
  std::vector<float> y = Decode(GgmlType::kQ8_0, b, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], 0.5f * static_cast<float>(j * 8 - 128)) << j;
}

TEST(GgufQuantsTest, Q4_0LowNibblesFirstHalfHighNibblesSecondHalf) {
  std::vector<uint8_t> b(18);
  PutF16(2.0f, b.data());
  for (int j = 0; j < 16; ++j) b[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  std::vector<float> y = Decode(GgmlType::kQ4_0, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 2.0f * static_cast<float>(j - 8)) << j;
    EXPECT_EQ(y[16 + j], 2.0f * static_cast<float>(7 - j)) << j;
  }
}

// Packs 8 (scale, min) 6-bit pairs the way the K-quant format documents them: pairs 0-3 in
// the low 6 bits of bytes 0-3 (scale) and 4-7 (min); pairs 4-7 as nibbles of bytes 8-11 with
// their top two bits in the spare top bits of bytes 0-3 (scale) and 4-7 (min).
void PackScalesK4(const int sc[8], const int mn[8], uint8_t* out) {
  std::memset(out, 0, 12);
  for (int j = 0; j < 4; ++j) {
    out[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    out[j + 4] = static_cast<uint8_t>(mn[j] | ((mn[j + 4] >> 4) << 6));
    out[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
  }
}

TEST(GgufQuantsTest, ScaleMinK4UnpacksAllEightPairs) {
  const int sc[8] = {1, 17, 33, 63, 0, 45, 62, 31};
  const int mn[8] = {63, 2, 40, 5, 50, 16, 7, 48};
  uint8_t packed[12];
  PackScalesK4(sc, mn, packed);
  for (int j = 0; j < 8; ++j) {
    uint8_t s, m;
    GetScaleMinK4(j, packed, &s, &m);
    EXPECT_EQ(s, sc[j]) << j;
    EXPECT_EQ(m, mn[j]) << j;
  }
}

// Value i of a 256-block belongs to sub-block i/32 and its 4-bit quant sits in byte
// 32*(i/64) + i%32, low nibble when (i%64) < 32.
void PutNibbleK(int i, int q, uint8_t* qs) {
  uint8_t& byte = qs[32 * (i / 64) + i % 32];
  byte = (i % 64) < 32 ? static_cast<uint8_t>((byte & 0xF0) | q) : static_cast<uint8_t>((byte & 0x0F) | (q << 4));
}

TEST(GgufQuantsTest, Q4_KIsScaledQuantMinusScaledMin) {
  const int sc[8] = {1, 17, 33, 63, 0, 45, 62, 31};
  const int mn[8] = {63, 2, 40, 5, 50, 16, 7, 48};
  std::vector<uint8_t> b(144, 0);
  PutF16(0.25f, b.data());
  PutF16(0.125f, b.data() + 2);
  PackScalesK4(sc, mn, b.data() + 4);
  for (int i = 0; i < 256; ++i) PutNibbleK(i, (i * 7) % 16, b.data() + 16);
  std::vector<float> y = Decode(GgmlType::kQ4_K, b, 256);
  for (int i = 0; i < 256; ++i) {
    float expected = 0.25f * sc[i / 32] * ((i * 7) % 16) - 0.125f * mn[i / 32];
    EXPECT_EQ(y[i], expected) << i;
  }
}

TEST(GgufQuantsTest, Q5_KAddsFifthBitFromQh) {
  const int sc[8] = {3, 9, 27, 63, 12, 5, 60, 44};
  const int mn[8] = {0, 63, 1, 30, 33, 8, 19, 2};
  std::vector<uint8_t> b(176, 0);
  PutF16(0.5f, b.data());
  PutF16(0.0625f, b.data() + 2);
  PackScalesK4(sc, mn, b.data() + 4);
  uint8_t* qh = b.data() + 16;
  for (int i = 0; i < 256; ++i) {
    int q = (i * 13 + 5) % 32;
    PutNibbleK(i, q & 15, b.data() + 48);
    if (q & 16) qh[i % 32] |= static_cast<uint8_t>(1u << (i / 32));  // bit = sub-block index
  }
  std::vector<float> y = Decode(GgmlType::kQ5_K, b, 256);
  for (int i = 0; i < 256; ++i) {
    float expected = 0.5f * sc[i / 32] * ((i * 13 + 5) % 32) - 0.0625f * mn[i / 32];
    EXPECT_EQ(y[i], expected) << i;
  }
}

TEST(GgufQuantsTest, Q6_KIsScaleTimesCenteredSixBitQuant) {
  std::vector<uint8_t> b(210, 0);
  uint8_t* ql = b.data();
  uint8_t* qh = b.data() + 128;
  int8_t scales[16];
  for (int s = 0; s < 16; ++s) scales[s] = static_cast<int8_t>(s * 17 - 128);
  std::memcpy(b.data() + 192, scales, 16);
  PutF16(0.03125f, b.data() + 208);
  for (int i = 0; i < 256; ++i) {
    int q = (i * 11 + 3) % 64;
    int half = i / 128, k = (i % 128) / 32, l = i % 32;
    uint8_t& low = ql[64 * half + l + 32 * (k & 1)];
    low |= static_cast<uint8_t>(k < 2 ? (q & 15) : ((q & 15) << 4));
    qh[32 * half + l] |= static_cast<uint8_t>((q >> 4) << (2 * k));
  }
  std::vector<float> y = Decode(GgmlType::kQ6_K, b, 256);
  for (int i = 0; i < 256; ++i) {
    float expected = 0.03125f * scales[i / 16] * static_cast<float>((i * 11 + 3) % 64 - 32);
    EXPECT_EQ(y[i], expected) << i;
  }
}

TEST(GgufQuantsTest, FloatTypesDecode) {
  std::vector<uint8_t> f16 = {0x00, 0x3c, 0x00, 0xc0};  // 1.0, -2.0
  EXPECT_EQ(Decode(GgmlType::kF16, f16, 2), (std::vector<float>{1.0f, -2.0f}));
  std::vector<uint8_t> bf16 = {0x80, 0x3f, 0x40, 0xc0};  // 1.0, -3.0
  EXPECT_EQ(Decode(GgmlType::kBF16, bf16, 2), (std::vector<float>{1.0f, -3.0f}));
  float f32[2] = {0.1f, -7.5f};
  std::vector<uint8_t> raw(8);
  std::memcpy(raw.data(), f32, 8);
  EXPECT_EQ(Decode(GgmlType::kF32, raw, 2), (std::vector<float>{0.1f, -7.5f}));
}

TEST(GgufQuantsTest, RejectsWrongSizes) {
  std::vector<float> out(64);
  std::vector<std::byte> bytes(34);
  EXPECT_FALSE(Dequantize(GgmlType::kQ8_0, bytes, 16, out.data()).ok());  // not a block multiple
  EXPECT_FALSE(Dequantize(GgmlType::kQ8_0, bytes, 64, out.data()).ok());  // too few bytes
  EXPECT_TRUE(Dequantize(GgmlType::kQ8_0, bytes, 32, out.data()).ok());
}

TEST(GgufQuantsTest, ToBf16RoundsDequantizedValues) {
  std::vector<uint8_t> b(34, 0);
  PutF16(1.0f, b.data());
  b[2] = 1;
  b[3] = static_cast<uint8_t>(-3);
  std::vector<uint16_t> out(32);
  std::span<const std::byte> src(reinterpret_cast<const std::byte*>(b.data()), b.size());
  ASSERT_TRUE(DequantizeToBf16(GgmlType::kQ8_0, src, 32, out.data()).ok());
  EXPECT_EQ(out[0], 0x3f80);  // 1.0
  EXPECT_EQ(out[1], 0xc040);  // -3.0
  EXPECT_EQ(out[2], 0x0000);
}

TEST(GgufQuantsTest, QuantizeQ8_0MatchesReferenceRule) {
  // amax 127 -> d = 1 exactly, so q = roundf(x): halves round away from zero.
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;
  x[1] = 2.5f;
  x[2] = -2.5f;
  x[3] = 0.49f;
  x[4] = -126.5f;
  std::vector<std::byte> q(34);
  QuantizeQ8_0(x.data(), 32, q.data());
  const auto* u = reinterpret_cast<const uint8_t*>(q.data());
  EXPECT_EQ(u[0] | (u[1] << 8), 0x3c00);  // fp16 1.0
  EXPECT_EQ(static_cast<int8_t>(u[2]), 127);
  EXPECT_EQ(static_cast<int8_t>(u[3]), 3);
  EXPECT_EQ(static_cast<int8_t>(u[4]), -3);
  EXPECT_EQ(static_cast<int8_t>(u[5]), 0);
  EXPECT_EQ(static_cast<int8_t>(u[6]), -127);
  // An all-zero block has d = 0 and all-zero quants.
  std::vector<float> zeros(32, 0.0f);
  QuantizeQ8_0(zeros.data(), 32, q.data());
  for (std::byte b : q) EXPECT_EQ(b, std::byte{0});
}

TEST(GgufQuantsTest, QuantizeQ8_0RoundTripsWithinHalfAStep) {
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i) x[i] = std::sin(0.37f * i) * (i < 32 ? 3.0f : 0.01f);
  std::vector<std::byte> q(68);
  QuantizeQ8_0(x.data(), 64, q.data());
  std::vector<float> y(64);
  ASSERT_TRUE(Dequantize(GgmlType::kQ8_0, q, 64, y.data()).ok());
  for (int i = 0; i < 64; ++i) {
    float step = (i < 32 ? 3.0f : 0.01f) / 127.0f;
    EXPECT_NEAR(y[i], x[i], 0.51f * step + 1e-3f * step * 127) << i;
  }
}

}  // namespace
}  // namespace pagellm
