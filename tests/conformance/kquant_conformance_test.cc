// Packed-quant (Q4_K, Q5_K, Q6_K, Q4_0, Q5_0, Q4_1, Q5_1, IQ4_NL, Q4_Z) paths of the CPU backend against the reference backend: Linear
// through PrepareLinear (the rearranged copy, AVX2 and AVX-512 VNNI, GEMV and GEMM batch
// sizes) bit for bit, since both compute backend/kquant_gemm.h's operations in the same
// order; Embedding rows equal to llama.cpp's dequantization (tensor/kquant_blocks.h); the
// bytes reported to the memory plan (<= 1.05x the blocks) and the released source view.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "backend/cpu/kernel_test_data.h"
#include "tensor/kquant_blocks.h"
#include "tests/conformance/conformance_util.h"

namespace pagellm::conformance {
namespace {

// n rows of k / 256 blocks of random bytes with finite fp16 scales (every code pattern).
std::vector<uint8_t> RandomKQuantBlocks(DType dtype, int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> w(DTypeBytes(dtype, n * k));
  for (auto& b : w) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> dist(-0.02f, 0.02f);
  const size_t block = DTypeBytes(dtype, DTypeBlockSize(dtype));
  const bool two_fields = dtype == DType::kQ4_K || dtype == DType::kQ5_K || dtype == DType::kQ4_1 || dtype == DType::kQ5_1;
  const std::vector<size_t> fields = dtype == DType::kQ6_K ? std::vector<size_t>{208}
                                     : two_fields          ? std::vector<size_t>{0, 2}
                                                           : std::vector<size_t>{0};
  for (size_t off = 0; off < w.size(); off += block) {
    for (size_t field : fields) {
      const uint16_t h = F32ToF16(dist(rng));
      std::memcpy(&w[off + field], &h, 2);
    }
  }
  return w;
}

class KQuantConformance : public ::testing::TestWithParam<DType> {};

TEST_P(KQuantConformance, LinearMatchesReferenceBitForBit) {
  const DType dtype = GetParam();
  ReferenceBackend ref;
  uint32_t seed = 11;
  for (auto [n, k] : std::vector<std::pair<int64_t, int64_t>>{{1, 256}, {37, 512}, {200, 1024}}) {
    const std::vector<uint8_t> w = RandomKQuantBlocks(dtype, n, k, seed++);
    const TensorView wv{const_cast<uint8_t*>(w.data()), dtype, {n, k}};
    const OwnedTensor bias = MakeTensor(RandomFloats(static_cast<size_t>(n), seed++, 0.3f), DType::kF32, {n});
    auto rw = ref.PrepareLinear(wv, bias.view);
    ASSERT_TRUE(rw.ok()) << rw.status();
    for (int64_t m : {1, 3, 4, 5, 16}) {
      const std::vector<float> x = RandomFloats(static_cast<size_t>(m * k), seed++);
      std::vector<float> want(static_cast<size_t>(m * n));
      ref.Linear(**rw, x.data(), m, want.data());
      for (const CpuVariant& v : CpuVariants()) {
        CpuBackend cpu(v.options);
        auto cw = cpu.PrepareLinear(wv, bias.view);
        ASSERT_TRUE(cw.ok()) << cw.status();
        std::vector<float> got(static_cast<size_t>(m * n));
        cpu.Linear(**cw, x.data(), m, got.data());
        testing::ExpectBitEqual(got, want, v.name + " " + std::string(DTypeName(dtype)) + " m=" + std::to_string(m) +
                                               " n=" + std::to_string(n) + " k=" + std::to_string(k));
      }
    }
  }
}

TEST_P(KQuantConformance, EmbeddingIsTheDequantizedRow) {
  const DType dtype = GetParam();
  const int64_t vocab = 9, hidden = 512;
  const std::vector<uint8_t> w = RandomKQuantBlocks(dtype, vocab, hidden, 5);
  const TensorView table{const_cast<uint8_t*>(w.data()), dtype, {vocab, hidden}};
  const std::vector<int32_t> ids = {3, 0, 8, 3};
  std::vector<float> want(ids.size() * hidden);
  for (size_t t = 0; t < ids.size(); ++t) {
    DequantizeRowKQuant(dtype, w.data() + DTypeBytes(dtype, ids[t] * hidden), hidden, want.data() + t * hidden);
  }
  ReferenceBackend ref;
  std::vector<float> got(want.size());
  ref.Embedding(table, ids, got.data());
  testing::ExpectBitEqual(got, want, "reference");
  for (const CpuVariant& v : CpuVariants()) {
    CpuBackend cpu(v.options);
    cpu.Embedding(table, ids, got.data());
    testing::ExpectBitEqual(got, want, v.name);
  }
}

TEST_P(KQuantConformance, MemoryPlanCountsTheRearrangedCopy) {
  const DType dtype = GetParam();
  const int64_t n = 512, k = 1024;
  const std::vector<uint8_t> w = RandomKQuantBlocks(dtype, n, k, 21);
  CpuBackend cpu(CpuBackendOptions{});
  {
    auto cw = cpu.PrepareLinear(TensorView{const_cast<uint8_t*>(w.data()), dtype, {n, k}}, TensorView{});
    ASSERT_TRUE(cw.ok()) << cw.status();
    // 1.0x for the 32-value types; Q4_Z's blocks that are each their own group keep 4 of
    // their 20 bytes in the group params as 3 (304 of 320 bytes per 16 rows).
    const double lower = dtype == DType::kQ4_Z ? 0.95 : 1.0;
    EXPECT_GE(static_cast<double>(cpu.prepared_weight_bytes()), lower * static_cast<double>(w.size()));
    EXPECT_LE(static_cast<double>(cpu.prepared_weight_bytes()), 1.05 * static_cast<double>(w.size()));
    const auto copied = cpu.TakeCopiedSources();
    ASSERT_EQ(copied.size(), 1u);
    EXPECT_EQ(copied[0].size(), w.size());
  }
  EXPECT_EQ(cpu.prepared_weight_bytes(), 0);
}

TEST(KQuantConformance, RejectsKNotAMultipleOf256) {
  std::vector<uint8_t> w(DTypeBytes(DType::kQ4_K, 256));
  CpuBackend cpu(CpuBackendOptions{});
  // A [2, 128] view cannot be made of whole blocks; ValidateLinearWeight says so.
  auto cw = cpu.PrepareLinear(TensorView{w.data(), DType::kQ4_K, {2, 128}}, TensorView{});
  EXPECT_FALSE(cw.ok());
}

INSTANTIATE_TEST_SUITE_P(Types, KQuantConformance, ::testing::Values(DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_XS, DType::kQ4_0,
                                                                DType::kQ5_0, DType::kQ4_1, DType::kQ5_1, DType::kIQ4_NL,
                                                                DType::kQ4_Z),
                         [](const auto& info) { return std::string(DTypeName(info.param)); });

}  // namespace
}  // namespace pagellm::conformance
