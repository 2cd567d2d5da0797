// Int8 paths of the CPU backend (Q8_0 and W8A8; AVX2 and AVX-512 VNNI GEMV, oneDNN)
// against the reference backend, plus the quantizers and the Q8_0 embedding.
//
// Tolerances. Both paths compute exact int32 dot products (per 32-block for Q8_0, per
// row for W8A8), so CPU and reference differ only in float scaling and summation:
//   Q8_0: per block fp32 (dot * d_x) * d_w, summed in fp32 over K/32 blocks (8 lanes;
//         the repacked path of q8_0_packed.h: fma(dot, d_w * d_x) in block order);
//         reference sums in double. |err| <= 1e-5 * S + 1e-6 with
//         S = sum_b |dot_b| * d_w,b * d_x,b.
//   W8A8: float(int32 dot) * (s_x * s_w) in fp32 vs double: |err| <= 1e-6 * S + 1e-6,
//         S = sum_k |q_x q_w| * s_x * s_w.
// Activation quantizers must be bit-exact (same bytes as a hand-computed block and as
// the llama.cpp formula applied to hand-picked ties).
#include <gtest/gtest.h>

#include <cstring>

#include "backend/cpu/int8_gemv.h"
#include "backend/cpu/kernel_test_data.h"
#include "backend/int8_quant.h"
#include "gguf/gguf_quants.h"
#include "tensor/kquant_blocks.h"
#include "tests/conformance/conformance_util.h"

namespace pagellm::conformance {
namespace {

// A Q8_0 weight [n, k] quantized from `values` by the GGUF writer's quantizer
// (llama.cpp's quantize_row_q8_0_ref, what `convert --outtype q8_0` produces).
struct OwnedQ8_0 {
  std::vector<std::byte> bytes;
  TensorView view;
};
OwnedQ8_0 MakeQ8_0(const std::vector<float>& values, int64_t n, int64_t k) {
  OwnedQ8_0 t;
  t.bytes.resize(DTypeBytes(DType::kQ8_0, n * k));
  QuantizeQ8_0(values.data(), n * k, t.bytes.data());
  t.view = TensorView{t.bytes.data(), DType::kQ8_0, {n, k}};
  return t;
}

TEST(Int8Quant, DTypeBytesOfQ8_0) {
  EXPECT_EQ(DTypeBytes(DType::kQ8_0, 64), 68u);
  EXPECT_EQ(DTypeBytes(DType::kBF16, 64), 128u);
  EXPECT_EQ(DTypeBlockSize(DType::kQ8_0), 32);
  EXPECT_EQ(DTypeName(DType::kQ8_0), "q8_0");
}

// Hand-computed: amax = 127 -> d = 1.0 (fp16 0x3c00), id = 1, q = round-half-even(x).
// 2.5 -> 2 and -3.5 -> -4 (llama.cpp's x86 _mm256_round_ps; roundf would give 3 / -4),
// 0.5 -> 0, 126.49 -> 126, -127 -> -127.
TEST(Int8Quant, Q8_0BlockHandComputed) {
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f, x[1] = 2.5f, x[2] = -3.5f, x[3] = 0.5f, x[4] = 126.49f, x[5] = -127.0f, x[6] = 1.0f;
  BlockQ8_0 b{};
  QuantizeRowQ8_0(x.data(), 32, &b);
  EXPECT_EQ(b.d, 0x3c00);
  const int8_t want[7] = {127, 2, -4, 0, 126, -127, 1};
  for (int i = 0; i < 7; ++i) EXPECT_EQ(b.qs[i], want[i]) << i;
  for (int i = 7; i < 32; ++i) EXPECT_EQ(b.qs[i], 0) << i;
}

// Block 0: amax = 1 -> d = fp16(1/127) = 0x2008 (1/127 = 1.0079 * 2^-7, mantissa
// round(0.0079 * 1024) = 8), id = 127: x * 127 = {127, 63.5 -> 64 (tie, even),
// -31.75 -> -32, 12.7 -> 13, 0}.
// Block 1: amax = 63.5 -> d = 0.5 (0x3800), id = 2: {127, 2.5 -> 2 and 5.5 -> 6 (ties
// to even), -0.5 -> 0}.  Block 2: all zero -> d = 0, q = 0.
TEST(Int8Quant, Q8_0ScaledTiesAndZeroBlock) {
  std::vector<float> x(96, 0.0f);
  x[0] = 1.0f, x[1] = 0.5f, x[2] = -0.25f, x[3] = 0.1f;
  x[32] = 63.5f, x[33] = 1.25f, x[34] = 2.75f, x[35] = -0.25f;
  BlockQ8_0 b[3];
  QuantizeRowQ8_0(x.data(), 96, b);
  EXPECT_EQ(b[0].d, 0x2008);
  EXPECT_EQ(b[1].d, 0x3800);
  EXPECT_EQ(b[2].d, 0);
  const int8_t want0[5] = {127, 64, -32, 13, 0};
  const int8_t want1[5] = {127, 2, 6, 0, 0};
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(b[0].qs[i], want0[i]) << i;
    EXPECT_EQ(b[1].qs[i], want1[i]) << i;
  }
  for (int i = 0; i < 32; ++i) EXPECT_EQ(b[2].qs[i], 0);
}

TEST(Int8Quant, PerRowInt8RoundTrip) {
  auto x = RandomFloats(200, 5);
  std::vector<int8_t> q(200);
  const float s = QuantizeRowInt8(x.data(), 200, q.data());
  float amax = 0;
  for (float v : x) amax = std::max(amax, std::abs(v));
  EXPECT_FLOAT_EQ(s, amax / 127.0f);
  int num_full = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_LE(std::abs(x[i] - s * q[i]), 0.5f * s * (1 + 1e-5f)) << i;
    num_full += std::abs(q[i]) == 127;
  }
  EXPECT_GE(num_full, 1);
}

TEST(Int8Quant, EmbeddingFromQ8_0) {
  // Rows of 64 values: d = 0.5 and qs = (row * 7 + i) % 255 - 127 (exact in fp32).
  const int64_t vocab = 5, hidden = 64, nb = hidden / 32;
  std::vector<BlockQ8_0> table(static_cast<size_t>(vocab * nb));
  for (int64_t r = 0; r < vocab; ++r) {
    for (int64_t b = 0; b < nb; ++b) {
      BlockQ8_0& blk = table[static_cast<size_t>(r * nb + b)];
      blk.d = F32ToF16(0.5f);
      for (int i = 0; i < 32; ++i) blk.qs[i] = static_cast<int8_t>((r * 7 + b * 32 + i) % 255 - 127);
    }
  }
  TensorView view{table.data(), DType::kQ8_0, {vocab, hidden}};
  const std::vector<int32_t> ids = {3, 0, 4, 3};
  std::vector<float> want(ids.size() * hidden);
  for (size_t t = 0; t < ids.size(); ++t)
    for (int64_t h = 0; h < hidden; ++h) want[t * hidden + static_cast<size_t>(h)] = 0.5f * static_cast<float>((ids[t] * 7 + h) % 255 - 127);
  ReferenceBackend ref;
  std::vector<float> got_ref(want.size());
  ref.Embedding(view, ids, got_ref.data());
  EXPECT_EQ(got_ref, want);
  for (const CpuVariant& v : CpuVariants()) {
    CpuBackend cpu(v.options);
    std::vector<float> got(want.size(), NAN);
    cpu.Embedding(view, ids, got.data());
    EXPECT_EQ(got, want) << v.name;
  }
}

struct Int8Case {
  int64_t m, n, k;
  bool bias;
};

// S of the tolerance: sum of |terms| of the quantized dot (see the file comment).
double Q8_0TermSum(const OwnedQ8_0& w, const float* x, int64_t n, int64_t k) {
  const int64_t nb = k / 32;
  std::vector<BlockQ8_0> xq(static_cast<size_t>(nb));
  QuantizeRowQ8_0(x, k, xq.data());
  const auto* wb = reinterpret_cast<const BlockQ8_0*>(w.bytes.data()) + n * nb;
  double s = 0;
  for (int64_t b = 0; b < nb; ++b) {
    int64_t dot = 0;
    for (int i = 0; i < 32; ++i) dot += std::abs(int{wb[b].qs[i]} * int{xq[static_cast<size_t>(b)].qs[i]});
    s += static_cast<double>(dot) * F16ToF32(wb[b].d) * F16ToF32(xq[static_cast<size_t>(b)].d);
  }
  return s;
}

void CheckQ8_0(const CpuVariant& variant, const Int8Case& c) {
  auto w_values = RandomFloats(static_cast<size_t>(c.n * c.k), 21 + static_cast<uint32_t>(c.n), 0.1f);
  auto x = RandomFloats(static_cast<size_t>(c.m * c.k), 23 + static_cast<uint32_t>(c.m));
  OwnedQ8_0 w = MakeQ8_0(w_values, c.n, c.k);
  OwnedTensor b = MakeTensor(RandomFloats(static_cast<size_t>(c.n), 22, 0.5f), DType::kF32, {c.n});
  TensorView bias = c.bias ? b.view : TensorView{};
  ReferenceBackend ref;
  CpuBackend cpu(variant.options);
  auto ref_w = ref.PrepareLinear(w.view, bias);
  auto cpu_w = cpu.PrepareLinear(w.view, bias);
  ASSERT_TRUE(ref_w.ok() && cpu_w.ok()) << ref_w.status().ToString() << cpu_w.status().ToString();
  std::vector<float> want(static_cast<size_t>(c.m * c.n)), got(want.size(), NAN);
  ref.Linear(**ref_w, x.data(), c.m, want.data());
  cpu.Linear(**cpu_w, x.data(), c.m, got.data());
  for (int64_t m = 0; m < c.m; ++m) {
    for (int64_t n = 0; n < c.n; ++n) {
      const double s = Q8_0TermSum(w, x.data() + m * c.k, n, c.k);
      const size_t i = static_cast<size_t>(m * c.n + n);
      ASSERT_NEAR(got[i], want[i], 1e-5 * s + 1e-6)
          << variant.name << " q8_0 M=" << c.m << " N=" << c.n << " K=" << c.k << " at (" << m << ", " << n << ")";
    }
  }
}

void CheckW8A8(const CpuVariant& variant, const Int8Case& c, DType dtype) {
  auto w_values = RandomFloats(static_cast<size_t>(c.n * c.k), 31 + static_cast<uint32_t>(c.n), 0.1f);
  auto x = RandomFloats(static_cast<size_t>(c.m * c.k), 33 + static_cast<uint32_t>(c.m));
  OwnedTensor w = MakeTensor(w_values, dtype, {c.n, c.k});
  OwnedTensor b = MakeTensor(RandomFloats(static_cast<size_t>(c.n), 32, 0.5f), DType::kBF16, {c.n});
  TensorView bias = c.bias ? b.view : TensorView{};
  const LinearOptions int8{.quantization = LinearQuantization::kInt8};
  ReferenceBackend ref;
  CpuBackend cpu(variant.options);
  auto ref_w = ref.PrepareLinear(w.view, bias, int8);
  auto cpu_w = cpu.PrepareLinear(w.view, bias, int8);
  ASSERT_TRUE(ref_w.ok() && cpu_w.ok());
  std::vector<float> want(static_cast<size_t>(c.m * c.n)), got(want.size(), NAN);
  ref.Linear(**ref_w, x.data(), c.m, want.data());
  cpu.Linear(**cpu_w, x.data(), c.m, got.data());
  std::vector<int8_t> qx(static_cast<size_t>(c.k)), qw(static_cast<size_t>(c.k));
  std::vector<float> row(static_cast<size_t>(c.k));
  for (int64_t m = 0; m < c.m; ++m) {
    const float sx = QuantizeRowInt8(x.data() + m * c.k, c.k, qx.data());
    for (int64_t n = 0; n < c.n; ++n) {
      for (int64_t k = 0; k < c.k; ++k) row[static_cast<size_t>(k)] = LoadElementAsF32(w.view.data, dtype, n * c.k + k);
      const float sw = QuantizeRowInt8(row.data(), c.k, qw.data());
      double s = 0;
      for (int64_t k = 0; k < c.k; ++k) s += std::abs(int{qx[static_cast<size_t>(k)]} * int{qw[static_cast<size_t>(k)]});
      s *= static_cast<double>(sx) * sw;
      const size_t i = static_cast<size_t>(m * c.n + n);
      ASSERT_NEAR(got[i], want[i], 1e-6 * s + 1e-6) << variant.name << " w8a8 " << DTypeName(dtype) << " M=" << c.m
                                                    << " N=" << c.n << " K=" << c.k << " at (" << m << ", " << n << ")";
    }
  }
}

const std::vector<int64_t> kRows = {1, 2, 3, 4, 5, 17, 64};

// Every variant twice: Q8_0 repacked at load (q8_0_packed.h) and read in place.
TEST(Int8Conformance, Q8_0AllPathsAndShapes) {
  const std::vector<std::pair<int64_t, int64_t>> nk = {{37, 32}, {64, 128}, {131, 288}};
  for (CpuVariant variant : CpuVariants()) {
    for (bool repack : {true, false}) {
      variant.options.repack_q8_0 = repack;
      const std::string base = variant.name;
      variant.name = base + (repack ? "_repacked" : "_in_place");
      for (auto [n, k] : nk) {
        for (int64_t m : kRows) CheckQ8_0(variant, {m, n, k, (m + n) % 2 == 0});
      }
      variant.name = base;
    }
  }
}

TEST(Int8Conformance, W8A8AllPathsAndShapes) {
  const std::vector<std::pair<int64_t, int64_t>> nk = {{37, 29}, {64, 128}, {131, 257}};
  for (const CpuVariant& variant : CpuVariants()) {
    for (DType dtype : {DType::kBF16, DType::kF32}) {
      for (auto [n, k] : nk) {
        for (int64_t m : kRows) CheckW8A8(variant, {m, n, k, (m + n) % 2 == 1}, dtype);
      }
    }
  }
}

// Quantized results stay near the float product: |W8A8 - fp32| <= 2% of sum |x||w|
// (8-bit weights and activations: ~2 * 2^-8 relative per term, random signs).
TEST(Int8Conformance, QuantizedCloseToFloat) {
  const int64_t m = 3, n = 64, k = 256;
  auto w_values = RandomFloats(static_cast<size_t>(n * k), 41, 0.1f);
  auto x = RandomFloats(static_cast<size_t>(m * k), 43);
  OwnedTensor w = MakeTensor(w_values, DType::kF32, {n, k});
  OwnedQ8_0 wq = MakeQ8_0(w_values, n, k);
  CpuBackend cpu;
  auto f = cpu.PrepareLinear(w.view, {});
  auto i8 = cpu.PrepareLinear(w.view, {}, {.quantization = LinearQuantization::kInt8});
  auto q8 = cpu.PrepareLinear(wq.view, {});
  ASSERT_TRUE(f.ok() && i8.ok() && q8.ok());
  std::vector<float> yf(static_cast<size_t>(m * n)), yi(yf.size()), yq(yf.size());
  cpu.Linear(**f, x.data(), m, yf.data());
  cpu.Linear(**i8, x.data(), m, yi.data());
  cpu.Linear(**q8, x.data(), m, yq.data());
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      double s = 0;
      for (int64_t kk = 0; kk < k; ++kk) s += std::abs(x[static_cast<size_t>(r * k + kk)] * w_values[static_cast<size_t>(c * k + kk)]);
      const size_t i = static_cast<size_t>(r * n + c);
      EXPECT_NEAR(yi[i], yf[i], 0.02 * s) << "w8a8 (" << r << ", " << c << ")";
      EXPECT_NEAR(yq[i], yf[i], 0.02 * s) << "q8_0 (" << r << ", " << c << ")";
    }
  }
}

// Q8_S [n, k] from `values` quantized per row as W8A8 quantizes a float weight, i.e. a
// compressed-tensors W8A8 checkpoint of that weight.
std::vector<BlockQ8_S> MakeQ8_S(const std::vector<float>& values, int64_t n, int64_t k) {
  std::vector<BlockQ8_S> blocks(static_cast<size_t>(n * k / 32));
  std::vector<int8_t> q(static_cast<size_t>(k));
  for (int64_t row = 0; row < n; ++row) {
    const float s = QuantizeRowInt8(values.data() + row * k, k, q.data());
    for (int64_t i = 0; i < k; ++i) {
      BlockQ8_S& b = blocks[static_cast<size_t>((row * k + i) / 32)];
      b.d = s;
      b.qs[i % 32] = q[static_cast<size_t>(i)];
    }
  }
  return blocks;
}

// A pre-quantized per-channel int8 weight (kQ8_S) runs exactly as W8A8 of the float weight it
// came from: same codes, same scales, same kernels, on every variant and in the reference.
TEST(Int8Conformance, PrequantizedQ8_SIsW8A8BitForBit) {
  const int64_t n = 67, k = 160;
  auto w_values = RandomFloats(static_cast<size_t>(n * k), 51, 0.1f);
  OwnedTensor w = MakeTensor(w_values, DType::kF32, {n, k});
  std::vector<BlockQ8_S> blocks = MakeQ8_S(w_values, n, k);
  const TensorView q8s{blocks.data(), DType::kQ8_S, {n, k}};
  OwnedTensor b = MakeTensor(RandomFloats(static_cast<size_t>(n), 52, 0.5f), DType::kF32, {n});
  const LinearOptions int8{.quantization = LinearQuantization::kInt8};
  ReferenceBackend ref;
  for (int64_t m : kRows) {
    auto x = RandomFloats(static_cast<size_t>(m * k), 53 + static_cast<uint32_t>(m));
    std::vector<float> want(static_cast<size_t>(m * n)), got(want.size());
    auto ref_float = ref.PrepareLinear(w.view, b.view, int8);
    auto ref_q8s = ref.PrepareLinear(q8s, b.view);
    ASSERT_TRUE(ref_float.ok() && ref_q8s.ok()) << ref_q8s.status();
    ref.Linear(**ref_float, x.data(), m, want.data());
    ref.Linear(**ref_q8s, x.data(), m, got.data());
    testing::ExpectBitEqual(got, want, "reference m=" + std::to_string(m));
    for (const CpuVariant& variant : CpuVariants()) {
      CpuBackend cpu(variant.options);
      auto cpu_float = cpu.PrepareLinear(w.view, b.view, int8);
      auto cpu_q8s = cpu.PrepareLinear(q8s, b.view);
      ASSERT_TRUE(cpu_float.ok() && cpu_q8s.ok()) << cpu_q8s.status();
      cpu.Linear(**cpu_float, x.data(), m, want.data());
      cpu.Linear(**cpu_q8s, x.data(), m, got.data());
      testing::ExpectBitEqual(got, want, variant.name + " m=" + std::to_string(m));
    }
  }
  // Scales that change within a row (grouped int8) cannot run as W8A8: refused, not approximated.
  blocks[1].d *= 2.0f;
  CpuBackend cpu;
  auto refused = cpu.PrepareLinear(q8s, TensorView{});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("share one scale"), std::string::npos) << refused.status();
  EXPECT_FALSE(ref.PrepareLinear(q8s, TensorView{}).ok());
}

TEST(Int8Conformance, RejectsBadQ8_0) {
  CpuBackend cpu;
  std::vector<std::byte> data(1024);
  EXPECT_FALSE(cpu.PrepareLinear(TensorView{data.data(), DType::kQ8_0, {2, 48}}, TensorView{}).ok());
  EXPECT_TRUE(cpu.PrepareLinear(TensorView{data.data(), DType::kQ8_0, {2, 64}}, TensorView{}).ok());
  EXPECT_FALSE(LinearQuantizationFromName("fp8").ok());
  EXPECT_EQ(*LinearQuantizationFromName("int8"), LinearQuantization::kInt8);
}

}  // namespace
}  // namespace pagellm::conformance
