// Q8_0 GEMM (int8_gemm.h): the AVX-512 VNNI and AVX2 kernels against the scalar
// GemmQ8_0Reference, bit for bit (same int32 block dots, same fp32 fma order), over odd
// M / N / K-block counts (partial register tiles, partial strips, partial panels); the
// scalar reference against hand-computed values and against the reference backend's
// double-precision Q8_0 linear; and the CpuBackend path picked by PAGELLM_ISA.
#include "backend/cpu/int8_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/int8_gemv.h"
#include "backend/cpu/kernel_test_data.h"
#include "backend/reference/reference_backend.h"
#include "tensor/half.h"

namespace pagellm {
namespace {

using testing::QuantizeWeights;
using testing::RandomFloats;

struct Problem {
  std::vector<float> x, bias;
  std::vector<BlockQ8_0> w;
  Q8_0GemmArgs args;
};

Problem MakeProblem(int64_t m, int64_t n, int64_t k, bool with_bias, uint32_t seed) {
  Problem p;
  p.x = RandomFloats(static_cast<size_t>(m * k), seed, 1.0f);
  p.w = QuantizeWeights(RandomFloats(static_cast<size_t>(n * k), seed + 1, 0.1f), n, k);
  p.bias = RandomFloats(static_cast<size_t>(n), seed + 2, 0.5f);
  p.args = {.x = p.x.data(), .num_rows = m, .k = k, .w = p.w.data(), .n = n,
            .bias = with_bias ? p.bias.data() : nullptr, .y = nullptr};
  return p;
}

// Runs the GEMM into a buffer with guard values past y and checks they survive.
std::vector<float> RunGemm(Q8_0GemmArgs args, bool avx512) {
  const size_t size = static_cast<size_t>(args.num_rows * args.n);
  std::vector<float> y(size + 64, -7.25f);
  args.y = y.data();
  GemmQ8_0(args, avx512);
  for (size_t i = size; i < y.size(); ++i) EXPECT_EQ(y[i], -7.25f) << "write past y at " << i;
  y.resize(size);
  return y;
}

std::vector<float> RunReference(Q8_0GemmArgs args) {
  std::vector<float> y(static_cast<size_t>(args.num_rows * args.n), NAN);
  args.y = y.data();
  GemmQ8_0Reference(args);
  return y;
}

std::vector<bool> Isas() {
  std::vector<bool> isas = {false};
  if (CpuSupportsAvx512Vnni()) isas.push_back(true);
  return isas;
}

TEST(Int8Gemm, KernelsEqualScalarReferenceBitForBit) {
  const std::vector<int64_t> rows = {1, 2, 5, 6, 7, 13, 37};
  const std::vector<int64_t> cols = {1, 15, 16, 17, 33, 64, 65, 129};
  const std::vector<int64_t> blocks = {1, 3, 7, 33};
  uint32_t seed = 1;
  for (int64_t m : rows) {
    for (int64_t n : cols) {
      for (int64_t nb : blocks) {
        Problem p = MakeProblem(m, n, nb * 32, (m + n + nb) % 2 == 0, seed++);
        const std::vector<float> want = RunReference(p.args);
        for (bool avx512 : Isas()) {
          const std::vector<float> got = RunGemm(p.args, avx512);
          for (size_t i = 0; i < want.size(); ++i) {
            ASSERT_EQ(got[i], want[i]) << (avx512 ? "avx512" : "avx2") << " M=" << m << " N=" << n
                                       << " K=" << nb * 32 << " at " << i;
          }
        }
      }
    }
  }
}

// Saturated blocks: every weight -127 (d = 0.5), every activation 127 after quantization
// (x = 1, d_x = fp16(1/127)). Each block's dot is -127 * 127 * 32 = -516128, the extreme
// the int32 lanes and AVX-512's -128 * sum(w) correction must carry exactly.
TEST(Int8Gemm, SaturatedBlocksHandComputed) {
  const int64_t m = 7, n = 19, k = 96;
  std::vector<BlockQ8_0> w(static_cast<size_t>(n * k / 32));
  for (auto& b : w) {
    b.d = F32ToF16(0.5f);
    std::memset(b.qs, 0x81, sizeof(b.qs));  // int8 -127
  }
  std::vector<float> x(static_cast<size_t>(m * k), 1.0f);
  const Q8_0GemmArgs args{.x = x.data(), .num_rows = m, .k = k, .w = w.data(), .n = n};
  const float scale = 0.5f * F16ToF32(F32ToF16(1.0f / 127.0f));
  const double want = 3.0 * -516128.0 * scale;
  for (float v : RunReference(args)) ASSERT_NEAR(v, want, std::abs(want) * 1e-6);
  for (bool avx512 : Isas()) {
    for (float v : RunGemm(args, avx512)) ASSERT_NEAR(v, want, std::abs(want) * 1e-6) << avx512;
  }
}

// Activation quantization ties: amax 127 gives id = 1, so x + 0.5 values round half to
// even (2.5 -> 2, -3.5 -> -4); the kernels' vector quantizer must give the same bytes.
TEST(Int8Gemm, ActivationRoundingTiesMatchReference) {
  const int64_t m = 3, n = 17, k = 64;
  Problem p = MakeProblem(m, n, k, false, 5);
  for (int64_t i = 0; i < m * k; ++i) p.x[static_cast<size_t>(i)] = static_cast<float>(i % 61 - 30) + 0.5f;
  for (int64_t r = 0; r < m; ++r) p.x[static_cast<size_t>(r * k)] = 127.0f, p.x[static_cast<size_t>(r * k + 32)] = -127.0f;
  const std::vector<float> want = RunReference(p.args);
  for (bool avx512 : Isas()) EXPECT_EQ(RunGemm(p.args, avx512), want) << avx512;
}

// The scalar oracle against the reference backend (double sums): fp32 rounding only.
// |err| <= 1e-5 * S + 1e-6, S = sum over blocks of |terms| (as the conformance test).
TEST(Int8Gemm, ScalarReferenceMatchesReferenceBackend) {
  const int64_t m = 5, n = 23, k = 320, nb = k / 32;
  Problem p = MakeProblem(m, n, k, true, 99);
  const std::vector<float> got = RunReference(p.args);
  ReferenceBackend ref;
  auto ref_w = ref.PrepareLinear(TensorView{p.w.data(), DType::kQ8_0, {n, k}},
                                 TensorView{p.bias.data(), DType::kF32, {n}});
  ASSERT_TRUE(ref_w.ok()) << ref_w.status().ToString();
  std::vector<float> want(got.size());
  ref.Linear(**ref_w, p.x.data(), m, want.data());
  std::vector<BlockQ8_0> xq(static_cast<size_t>(nb));
  for (int64_t r = 0; r < m; ++r) {
    QuantizeRowQ8_0(p.x.data() + r * k, k, xq.data());
    for (int64_t c = 0; c < n; ++c) {
      double s = 0;
      for (int64_t b = 0; b < nb; ++b) {
        int64_t dot = 0;
        for (int i = 0; i < 32; ++i) dot += std::abs(int{p.w[static_cast<size_t>(c * nb + b)].qs[i]} * int{xq[static_cast<size_t>(b)].qs[i]});
        s += static_cast<double>(dot) * F16ToF32(p.w[static_cast<size_t>(c * nb + b)].d) * F16ToF32(xq[static_cast<size_t>(b)].d);
      }
      const size_t i = static_cast<size_t>(r * n + c);
      ASSERT_NEAR(got[i], want[i], 1e-5 * s + 1e-6) << "(" << r << ", " << c << ")";
    }
  }
}

// CpuBackend with the ISA from the environment (ctest runs this once more with
// PAGELLM_ISA=avx2): a Q8_0 linear with M > gemv_max_rows goes through the GEMM.
TEST(Int8Gemm, CpuBackendLinearUsesGemm) {
  CpuBackend cpu;
  const char* env = std::getenv("PAGELLM_ISA");
  if (env != nullptr && std::string(env) == "avx2") {
    ASSERT_EQ(cpu.options().isa, CpuIsa::kAvx2);
  }
  const int64_t m = 11, n = 70, k = 160;
  Problem p = MakeProblem(m, n, k, true, 7);
  auto w = cpu.PrepareLinear(TensorView{p.w.data(), DType::kQ8_0, {n, k}}, TensorView{p.bias.data(), DType::kF32, {n}});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  std::vector<float> got(static_cast<size_t>(m * n), NAN);
  cpu.Linear(**w, p.x.data(), m, got.data());
  EXPECT_EQ(got, RunReference(p.args)) << CpuIsaName(cpu.options().isa);
}

}  // namespace
}  // namespace pagellm
