// Element-wise ops of the CPU backend (both ISA settings) against the reference backend.
// Tolerances: embedding, residual add and KV writes are exact (pure conversions/copies);
// RMSNorm, RoPE and SiLU*up are fp32 math vs double math: rtol 1e-5 (+ atol 1e-6).
#include <gtest/gtest.h>

#include <cstring>

#include "tests/conformance/conformance_util.h"

namespace pagellm::conformance {
namespace {

TEST(OpsConformance, Embedding) {
  const int64_t vocab = 50, hidden = 37;
  auto table_values = RandomFloats(static_cast<size_t>(vocab * hidden), 1);
  std::vector<int32_t> ids = {3, 0, 49, 3, 17};
  for (const CpuVariant& variant : CpuVariants()) {
    for (DType dtype : {DType::kBF16, DType::kF16, DType::kF32}) {
      OwnedTensor table = MakeTensor(table_values, dtype, {vocab, hidden});
      std::vector<float> want(ids.size() * hidden), got(want.size());
      ReferenceBackend().Embedding(table.view, ids, want.data());
      CpuBackend(variant.options).Embedding(table.view, ids, got.data());
      ExpectClose(got, want, 0, 0, variant.name + " embedding " + std::string(DTypeName(dtype)));
    }
  }
}

TEST(OpsConformance, RmsNormRowsAndPerHead) {
  for (const CpuVariant& variant : CpuVariants()) {
    for (auto [rows, dim] : std::vector<std::pair<int64_t, int64_t>>{{1, 64}, {7, 37}, {24, 128}, {300, 896}}) {
      auto x = RandomFloats(static_cast<size_t>(rows * dim), 2, 3.0f);
      auto w = RandomFloats(static_cast<size_t>(dim), 3);
      std::vector<float> want(x.size()), got(x.size());
      ReferenceBackend().RmsNorm(x.data(), w.data(), rows, dim, 1e-6f, want.data());
      CpuBackend cpu(variant.options);
      cpu.RmsNorm(x.data(), w.data(), rows, dim, 1e-6f, got.data());
      ExpectClose(got, want, 1e-6, 1e-5, variant.name + " rmsnorm");
      cpu.RmsNorm(x.data(), w.data(), rows, dim, 1e-6f, x.data());  // in place
      ExpectClose(x, want, 1e-6, 1e-5, variant.name + " rmsnorm in place");
    }
  }
}

TEST(OpsConformance, RopeFullAndPartial) {
  for (const CpuVariant& variant : CpuVariants()) {
    for (auto [head_dim, rotary_dim] : std::vector<std::pair<int64_t, int64_t>>{{128, 128}, {64, 16}, {40, 20}}) {
      RopeParams p{.rotary_dim = rotary_dim, .theta = 1e6, .max_positions = 5000};
      auto table = BuildRopeTable(p);
      ASSERT_TRUE(table.ok());
      const int64_t heads = 3;
      std::vector<int32_t> positions = {0, 1, 7, 4999, 1234};
      auto x = RandomFloats(positions.size() * heads * head_dim, 4);
      auto want = x;
      ReferenceBackend().Rope(*table, positions, heads, head_dim, want.data());
      CpuBackend(variant.options).Rope(*table, positions, heads, head_dim, x.data());
      ExpectClose(x, want, 1e-6, 1e-5, variant.name + " rope");
    }
  }
}

TEST(OpsConformance, SiluMulAndAdd) {
  auto gate = RandomFloats(10007, 5, 4.0f);
  gate[0] = -100.0f;
  gate[1] = 100.0f;
  gate[2] = 0.0f;
  auto up = RandomFloats(gate.size(), 6);
  for (const CpuVariant& variant : CpuVariants()) {
    std::vector<float> want(gate.size()), got(gate.size());
    ReferenceBackend().SiluMul(gate.data(), up.data(), static_cast<int64_t>(gate.size()), want.data());
    CpuBackend cpu(variant.options);
    cpu.SiluMul(gate.data(), up.data(), static_cast<int64_t>(gate.size()), got.data());
    ExpectClose(got, want, 1e-6, 1e-5, variant.name + " silu_mul");
    auto sum_want = up, sum_got = up;
    ReferenceBackend().AddInPlace(gate.data(), static_cast<int64_t>(gate.size()), sum_want.data());
    cpu.AddInPlace(gate.data(), static_cast<int64_t>(gate.size()), sum_got.data());
    ExpectClose(sum_got, sum_want, 0, 0, variant.name + " add");
  }
}

TEST(OpsConformance, WriteKvIsBitExact) {
  for (const CpuVariant& variant : CpuVariants()) {
    for (DType dtype : {DType::kBF16, DType::kF16, DType::kF32}) {
      KvCacheSpec spec{.num_layers = 1, .num_blocks = 6, .block_size = 4, .num_kv_heads = 2, .head_dim = 20,
                       .dtype = dtype};
      auto ref_cache = PagedKvCache::Create(spec);
      auto cpu_cache = PagedKvCache::Create(spec);
      ASSERT_TRUE(ref_cache.ok() && cpu_cache.ok());
      std::vector<int64_t> slots = {5, 0, 23, -1, 13, 12};
      auto k = RandomFloats(slots.size() * 2 * 20, 7), v = RandomFloats(slots.size() * 2 * 20, 8);
      ReferenceBackend().WriteKv(k.data(), v.data(), slots, (*ref_cache)->layer(0));
      CpuBackend(variant.options).WriteKv(k.data(), v.data(), slots, (*cpu_cache)->layer(0));
      EXPECT_EQ(std::memcmp((*ref_cache)->layer(0).k, (*cpu_cache)->layer(0).k, (*ref_cache)->total_bytes()), 0)
          << variant.name << " " << DTypeName(dtype);
      // Spot-check the layout: token 2 (slot 23 = block 5, offset 3), kv head 1, dim 4.
      KvLayerView layer = (*cpu_cache)->layer(0);
      float stored = LoadElementAsF32(layer.v, dtype, layer.ElementIndex(5, 1, 3) + 4);
      EXPECT_EQ(stored, LoadElementAsF32(MakeTensor({v[2 * 40 + 20 + 4]}, dtype, {1}).view.data, dtype, 0));
    }
  }
}

}  // namespace
}  // namespace pagellm::conformance
