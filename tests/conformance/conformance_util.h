// Helpers shared by the backend conformance tests: random data, the CPU backend
// variants under test, and tolerance checks.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/reference/reference_backend.h"
#include "tensor/half.h"

namespace pagellm::conformance {

inline std::vector<float> RandomFloats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Owned tensor of the given dtype filled with rounded values of `values`.
struct OwnedTensor {
  std::vector<uint8_t> bytes;
  TensorView view;
};
inline OwnedTensor MakeTensor(const std::vector<float>& values, DType dtype, std::vector<int64_t> shape) {
  OwnedTensor t;
  t.bytes.resize(values.size() * DTypeSize(dtype));
  for (size_t i = 0; i < values.size(); ++i) StoreElementFromF32(t.bytes.data(), dtype, static_cast<int64_t>(i), values[i]);
  t.view = TensorView{t.bytes.data(), dtype, std::move(shape)};
  return t;
}

struct CpuVariant {
  std::string name;
  CpuBackendOptions options;
};

// Every code path of the CPU backend this machine can run.
inline std::vector<CpuVariant> CpuVariants() {
  std::vector<CpuVariant> out;
  // (float/bf16 ISA, int8 ISA): the int8 kernels take AVX-512 VNNI without BF16 too.
  std::vector<std::pair<CpuIsa, CpuIsa>> isas = {{CpuIsa::kAvx2, CpuIsa::kAvx2}};
  if (CpuSupportsAvx512Bf16()) {
    isas.push_back({CpuIsa::kAvx512, CpuIsa::kAvx512});
  } else if (DetectCpuInt8Isa() == CpuIsa::kAvx512) {
    isas.push_back({CpuIsa::kAvx2, CpuIsa::kAvx512});
  }
  for (auto [isa, int8_isa] : isas) {
    std::string n(CpuIsaName(isa));
    if (int8_isa != isa) n += "_int8_" + std::string(CpuIsaName(int8_isa));
    out.push_back({n + "_gemv_only", {.isa = isa, .int8_isa = int8_isa, .gemv_max_rows = 1 << 30, .use_dnnl = false}});
    out.push_back({n + "_default", {.isa = isa, .int8_isa = int8_isa, .gemv_max_rows = 4, .use_dnnl = true}});
    out.push_back({n + "_dnnl_always", {.isa = isa, .int8_isa = int8_isa, .gemv_max_rows = 0, .use_dnnl = true}});
  }
  return out;
}

// Asserts |got - want| <= atol + rtol * |want| element-wise; reports the worst index.
inline void ExpectClose(const std::vector<float>& got, const std::vector<float>& want, double atol, double rtol,
                        const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0;
  size_t worst_idx = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double excess = std::abs(static_cast<double>(got[i]) - want[i]) - (atol + rtol * std::abs(want[i]));
    if (!(excess <= worst)) {
      worst = std::isnan(excess) ? INFINITY : excess;
      worst_idx = i;
    }
  }
  EXPECT_LE(worst, 0.0) << what << ": index " << worst_idx << " got " << got[worst_idx] << " want "
                        << want[worst_idx] << " (atol " << atol << ", rtol " << rtol << ")";
}

}  // namespace pagellm::conformance
