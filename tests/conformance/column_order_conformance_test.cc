// Linear weights whose input columns are stored in another order (TensorView::column_order,
// GPTQ act-order): every backend gathers x[:, order] first, so the result is bit for bit the
// same weight without an order run on the gathered input, and matches the logical weight
// (stored column j moved to column order[j]) up to the summation order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

#include "backend/cpu/kernel_test_data.h"
#include "tensor/kquant_blocks.h"
#include "tests/conformance/conformance_util.h"

namespace pagellm::conformance {
namespace {

std::vector<int32_t> RandomPermutation(int64_t k, uint32_t seed) {
  std::vector<int32_t> order(static_cast<size_t>(k));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  return order;
}

std::vector<float> Gathered(const std::vector<float>& x, int64_t rows, const std::vector<int32_t>& order) {
  const int64_t k = static_cast<int64_t>(order.size());
  std::vector<float> out(x.size());
  for (int64_t m = 0; m < rows; ++m) {
    for (int64_t j = 0; j < k; ++j) out[m * k + j] = x[m * k + order[j]];
  }
  return out;
}

// Q4_Z blocks with random codes, zero points 0..15 and small fp16 scales.
std::vector<uint8_t> RandomQ4_Z(int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<BlockQ4_Z> blocks(static_cast<size_t>(n * k / 32));
  std::uniform_real_distribution<float> scale(0.001f, 0.02f);
  for (BlockQ4_Z& b : blocks) {
    b.d = F32ToF16(scale(rng));
    b.z = static_cast<uint8_t>(rng() % 16);
    b.reserved = 0;
    for (uint8_t& q : b.qs) q = static_cast<uint8_t>(rng());
  }
  std::vector<uint8_t> bytes(blocks.size() * sizeof(BlockQ4_Z));
  std::memcpy(bytes.data(), blocks.data(), bytes.size());
  return bytes;
}

// Runs `w` with and without `order` on every backend variant: ordered(x) == plain(gather(x)).
void ExpectGatherSemantics(const TensorView& plain, const std::vector<int32_t>& order, const std::string& what) {
  TensorView ordered = plain;
  ordered.column_order = order;
  const int64_t n = plain.dim(0), k = plain.dim(1);
  std::vector<std::pair<std::string, std::unique_ptr<Backend>>> backends;
  backends.emplace_back("reference", std::make_unique<ReferenceBackend>());
  for (const CpuVariant& v : CpuVariants()) backends.emplace_back(v.name, std::make_unique<CpuBackend>(v.options));
  for (auto& [name, be] : backends) {
    auto with_order = be->PrepareLinear(ordered, TensorView{});
    auto without = be->PrepareLinear(plain, TensorView{});
    ASSERT_TRUE(with_order.ok()) << with_order.status();
    ASSERT_TRUE(without.ok()) << without.status();
    for (int64_t m : {1, 4, 5, 17}) {
      const std::vector<float> x = RandomFloats(static_cast<size_t>(m * k), static_cast<uint32_t>(m + k));
      std::vector<float> got(static_cast<size_t>(m * n)), want(got.size());
      be->Linear(**with_order, x.data(), m, got.data());
      be->Linear(**without, Gathered(x, m, order).data(), m, want.data());
      testing::ExpectBitEqual(got, want, what + " " + name + " m=" + std::to_string(m));
    }
  }
}

TEST(ColumnOrder, LinearGathersTheInputQ4_Z) {
  const int64_t n = 40, k = 512;
  const std::vector<uint8_t> w = RandomQ4_Z(n, k, 3);
  ExpectGatherSemantics(TensorView{const_cast<uint8_t*>(w.data()), DType::kQ4_Z, {n, k}}, RandomPermutation(k, 4),
                        "q4_z");
}

TEST(ColumnOrder, LinearGathersTheInputFloat) {
  const int64_t n = 24, k = 96;
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    const OwnedTensor w = MakeTensor(RandomFloats(static_cast<size_t>(n * k), 7, 0.1f), dtype, {n, k});
    ExpectGatherSemantics(w.view, RandomPermutation(k, 8), std::string(DTypeName(dtype)));
  }
}

// The stored weight with its order equals the logical weight (columns put back) without one.
TEST(ColumnOrder, EqualsTheLogicalWeight) {
  const int64_t n = 12, k = 64, m = 3;
  const std::vector<float> stored = RandomFloats(static_cast<size_t>(n * k), 21, 0.1f);
  const std::vector<int32_t> order = RandomPermutation(k, 22);
  std::vector<float> logical(stored.size());
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t j = 0; j < k; ++j) logical[r * k + order[j]] = stored[r * k + j];
  }
  TensorView ordered{const_cast<float*>(stored.data()), DType::kF32, {n, k}};
  ordered.column_order = order;
  const TensorView plain{logical.data(), DType::kF32, {n, k}};
  const std::vector<float> x = RandomFloats(static_cast<size_t>(m * k), 23);
  ReferenceBackend ref;
  auto a = ref.PrepareLinear(ordered, TensorView{});
  auto b = ref.PrepareLinear(plain, TensorView{});
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<float> got(static_cast<size_t>(m * n)), want(got.size());
  ref.Linear(**a, x.data(), m, got.data());
  ref.Linear(**b, x.data(), m, want.data());
  ExpectClose(got, want, 1e-6, 1e-6, "logical weight");
}

TEST(ColumnOrder, RefusesAnOrderThatIsNotAPermutation) {
  const int64_t n = 4, k = 32;
  const OwnedTensor w = MakeTensor(RandomFloats(static_cast<size_t>(n * k), 1), DType::kF32, {n, k});
  std::vector<int32_t> repeated = RandomPermutation(k, 2);
  repeated[5] = repeated[6];
  std::vector<int32_t> short_order(k - 1, 0), out_of_range(k, static_cast<int32_t>(k));
  ReferenceBackend ref;
  CpuBackend cpu;
  for (const std::vector<int32_t>* order : {&repeated, &short_order, &out_of_range}) {
    TensorView v = w.view;
    v.column_order = *order;
    for (Backend* be : std::initializer_list<Backend*>{&ref, &cpu}) {
      auto prepared = be->PrepareLinear(v, TensorView{});
      ASSERT_FALSE(prepared.ok()) << be->name();
      EXPECT_NE(prepared.status().message().find("column order"), std::string::npos) << prepared.status();
    }
  }
}

}  // namespace
}  // namespace pagellm::conformance
