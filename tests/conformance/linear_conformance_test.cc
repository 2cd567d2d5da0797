// Linear: every CPU path (AVX2/AVX-512 GEMV, oneDNN) against the reference backend.
//
// Tolerance, per output element n of row m, with S = sum_k |x[m,k]| * |w[n,k]|:
//   fp32 activations (AVX2 GEMV, AVX-512 f16/f32 GEMV, oneDNN f16/f32): 1e-5 * S + 1e-6
//   bf16 activations (AVX-512 bf16 GEMV, oneDNN bf16): x is rounded to bf16 (rel. error
//   <= 2^-9), so |err| <= 2^-9 * S plus fp32 summation noise -> 4e-3 * S + 1e-6.
#include <gtest/gtest.h>

#include "tests/conformance/conformance_util.h"

namespace pagellm::conformance {
namespace {

struct LinearCase {
  int64_t m, n, k;
  DType dtype;
  bool bias;
};

void CheckLinear(const CpuVariant& variant, const LinearCase& c) {
  auto w_values = RandomFloats(static_cast<size_t>(c.n * c.k), 11 + static_cast<uint32_t>(c.n), 0.1f);
  auto b_values = RandomFloats(static_cast<size_t>(c.n), 12, 0.5f);
  auto x = RandomFloats(static_cast<size_t>(c.m * c.k), 13 + static_cast<uint32_t>(c.m));
  OwnedTensor w = MakeTensor(w_values, c.dtype, {c.n, c.k});
  OwnedTensor b = MakeTensor(b_values, DType::kBF16, {c.n});
  TensorView bias = c.bias ? b.view : TensorView{};

  ReferenceBackend ref;
  CpuBackend cpu(variant.options);
  auto ref_w = ref.PrepareLinear(w.view, bias);
  auto cpu_w = cpu.PrepareLinear(w.view, bias);
  ASSERT_TRUE(ref_w.ok() && cpu_w.ok());
  std::vector<float> want(static_cast<size_t>(c.m * c.n)), got(want.size(), NAN);
  ref.Linear(**ref_w, x.data(), c.m, want.data());
  cpu.Linear(**cpu_w, x.data(), c.m, got.data());

  const bool uses_dnnl = variant.options.use_dnnl && c.m > variant.options.gemv_max_rows;
  const bool bf16_acts = c.dtype == DType::kBF16 && (uses_dnnl || variant.options.isa == CpuIsa::kAvx512);
  const double rtol = bf16_acts ? 4e-3 : 1e-5;
  for (int64_t m = 0; m < c.m; ++m) {
    for (int64_t n = 0; n < c.n; ++n) {
      double s = 0;
      for (int64_t k = 0; k < c.k; ++k) {
        s += std::abs(x[static_cast<size_t>(m * c.k + k)] * LoadElementAsF32(w.view.data, c.dtype, n * c.k + k));
      }
      size_t i = static_cast<size_t>(m * c.n + n);
      ASSERT_NEAR(got[i], want[i], rtol * s + 1e-6)
          << variant.name << " " << DTypeName(c.dtype) << " M=" << c.m << " N=" << c.n << " K=" << c.k
          << " at (" << m << ", " << n << ")";
    }
  }
}

TEST(LinearConformance, AllPathsShapesAndDtypes) {
  const std::vector<int64_t> rows = {1, 3, 4, 5, 17, 64};
  const std::vector<std::pair<int64_t, int64_t>> nk = {{37, 29}, {64, 128}, {131, 257}};
  for (const CpuVariant& variant : CpuVariants()) {
    for (DType dtype : {DType::kBF16, DType::kF16, DType::kF32}) {
      for (auto [n, k] : nk) {
        for (int64_t m : rows) CheckLinear(variant, {m, n, k, dtype, /*bias=*/(m + n) % 2 == 0});
      }
    }
  }
}

TEST(LinearConformance, RejectsBadWeights) {
  CpuBackend cpu;
  std::vector<float> data(6);
  EXPECT_FALSE(cpu.PrepareLinear(TensorView{data.data(), DType::kF32, {6}}, TensorView{}).ok());
  EXPECT_FALSE(cpu.PrepareLinear(TensorView{data.data(), DType::kI32, {2, 3}}, TensorView{}).ok());
  EXPECT_FALSE(cpu.PrepareLinear(TensorView{data.data(), DType::kF32, {2, 3}},
                                 TensorView{data.data(), DType::kF32, {3}}).ok());
}

}  // namespace
}  // namespace pagellm::conformance
