// Packed bf16 linear (bf16_packed.h): the load-time layout element by element; the
// AVX-512 BF16 and AVX2 kernels bit for bit against the scalar GemmBf16PackedReference
// over odd K (a half-filled last pair), odd N (partial strips), M = 1..20 (every GEMV and
// GEMM tile shape) and realistic shapes, with and without bias; the reference itself
// against double-precision sums; the result of a row not depending on the batch it runs
// in; and the CpuBackend path picked by PAGELLM_ISA (ctest runs it again with avx2),
// including the bytes it reports to the memory plan.
#include "backend/cpu/bf16_packed.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/dnnl_matmul.h"
#include "backend/cpu/kernel_test_data.h"
#include "backend/cpu/packed_rows.h"
#include "tensor/half.h"

namespace pagellm {
namespace {

using testing::ExpectBitEqual;
using testing::RandomFloats;

std::vector<uint16_t> RandomBf16(size_t n, uint32_t seed) {
  std::vector<uint16_t> w(n);
  const std::vector<float> f = RandomFloats(n, seed, 0.1f);
  for (size_t i = 0; i < n; ++i) w[i] = F32ToBf16(f[i]);
  return w;
}

std::vector<bool> Isas() {
  std::vector<bool> isas = {false};
  if (CpuSupportsAvx512Bf16()) isas.push_back(true);
  return isas;
}

// Runs the kernel into a buffer with guard values past y and checks they survive.
std::vector<float> RunPacked(const Bf16PackedWeight& w, const std::vector<float>& x, int64_t m, const float* bias,
                             bool avx512) {
  const size_t size = static_cast<size_t>(m * w.n);
  std::vector<float> y(size + 64, -7.25f);
  RunBf16Packed(w, x.data(), m, bias, y.data(), avx512);
  for (size_t i = size; i < y.size(); ++i) EXPECT_EQ(y[i], -7.25f) << "write past y at " << i;
  y.resize(size);
  return y;
}

TEST(Bf16Packed, LayoutElementByElement) {
  const int64_t n = 21, k = 7;  // two strips (the second with 5 rows), 4 pairs (the last half filled)
  const std::vector<uint16_t> w = RandomBf16(static_cast<size_t>(n * k), 3);
  const auto p = Bf16PackedWeight::Pack(w.data(), n, k);
  ASSERT_EQ(p->num_strips, 2);
  ASSERT_EQ(p->num_pairs, 4);
  EXPECT_EQ(p->owned_bytes(), 2 * 4 * 16 * 2 * 2);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p->data.get()) % 64, 0u);
  for (int64_t s = 0; s < 2; ++s) {
    for (int64_t pair = 0; pair < 4; ++pair) {
      for (int64_t r = 0; r < 16; ++r) {
        for (int64_t e = 0; e < 2; ++e) {
          const int64_t row = s * 16 + r, col = 2 * pair + e;
          const uint16_t got = p->data.get()[s * p->strip_stride() + pair * 32 + r * 2 + e];
          const uint16_t want = row < n && col < k ? w[static_cast<size_t>(row * k + col)] : 0;
          ASSERT_EQ(got, want) << "strip " << s << " pair " << pair << " row " << r << " elem " << e;
        }
      }
    }
  }
}

// Rows read back out of the packed copy (a tied lm_head's embedding lookups) are the
// checkpoint's values, odd k (a half-filled last pair) and a partial strip included.
TEST(Bf16Packed, RowsReadBackAsTheCheckpointHasThem) {
  const int64_t n = 21, k = 7;
  const std::vector<uint16_t> w = RandomBf16(static_cast<size_t>(n * k), 4);
  const auto p = Bf16PackedWeight::Pack(w.data(), n, k);
  std::vector<float> got(static_cast<size_t>(k));
  for (int64_t row = 0; row < n; ++row) {
    DequantizePackedRow(*p, row, got.data());
    for (int64_t c = 0; c < k; ++c) ASSERT_EQ(got[c], Bf16ToF32(w[row * k + c])) << "row " << row << " col " << c;
  }
}

// The oracle is itself checked: its fp32 sums stay within fp32 rounding of the exact sum
// of x * w, x rounded to bf16 or not (so the kernel tests below pin the arithmetic, not
// a guess).
TEST(Bf16Packed, ReferenceMatchesDoublePrecisionSums) {
  const int64_t m = 3, n = 40, k = 333;
  const std::vector<uint16_t> w = RandomBf16(static_cast<size_t>(n * k), 5);
  const std::vector<float> x = RandomFloats(static_cast<size_t>(m * k), 6, 1.0f);
  for (bool round_x : {false, true}) {
    std::vector<float> y(static_cast<size_t>(m * n));
    GemmBf16PackedReference(w.data(), n, k, x.data(), m, nullptr, y.data(), round_x);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double exact = 0, scale = 0;
        for (int64_t c = 0; c < k; ++c) {
          const float xc = x[static_cast<size_t>(i * k + c)];
          const double prod = double{Bf16ToF32(w[static_cast<size_t>(j * k + c)])} *
                              (round_x ? Bf16ToF32(F32ToBf16(xc)) : xc);
          exact += prod;
          scale += std::abs(prod);
        }
        EXPECT_NEAR(y[static_cast<size_t>(i * n + j)], exact, 1e-6 * scale) << i << "," << j << " " << round_x;
      }
    }
  }
}

TEST(Bf16Packed, KernelsEqualScalarReferenceBitForBit) {
  struct Case { int64_t m, n, k; };
  std::vector<Case> cases;
  for (int64_t m = 1; m <= 20; ++m) cases.push_back({m, 1 + 13 * m, m % 2 == 0 ? 64 : 31 + m});
  for (int64_t n : {1, 15, 16, 17, 63, 64, 65, 131})
    for (int64_t k : {1, 2, 3, 32, 33}) cases.push_back({n % 7 + 1, n, k});
  for (Case c : std::vector<Case>{{1, 1024, 1024}, {4, 3072, 1024}, {3, 1024, 3072}, {16, 1024, 1024},
                                  {7, 77, 3072}, {33, 200, 128}}) {
    cases.push_back(c);
  }
  uint32_t seed = 100;
  for (const Case& c : cases) {
    const std::vector<uint16_t> w = RandomBf16(static_cast<size_t>(c.n * c.k), seed++);
    const std::vector<float> x = RandomFloats(static_cast<size_t>(c.m * c.k), seed++, 1.0f);
    const std::vector<float> bias = RandomFloats(static_cast<size_t>(c.n), seed++, 0.5f);
    const auto p = Bf16PackedWeight::Pack(w.data(), c.n, c.k);
    for (const float* b : {static_cast<const float*>(nullptr), bias.data()}) {
      for (bool avx512 : Isas()) {
        std::vector<float> want(static_cast<size_t>(c.m * c.n));
        GemmBf16PackedReference(w.data(), c.n, c.k, x.data(), c.m, b, want.data(), /*round_x_to_bf16=*/avx512);
        ExpectBitEqual(RunPacked(*p, x, c.m, b, avx512), want,
                       ::testing::PrintToString(std::vector<int64_t>{c.m, c.n, c.k}) + (b ? " bias" : "") +
                           (avx512 ? " avx512" : " avx2"));
      }
    }
  }
}

// Row i of a 17-row call equals the same row computed alone (decode rows give the same
// logits whether they run alone, in a GEMV batch or inside a prefill GEMM).
TEST(Bf16Packed, RowResultDoesNotDependOnTheBatch) {
  const int64_t m = 17, n = 150, k = 250;
  const std::vector<uint16_t> w = RandomBf16(static_cast<size_t>(n * k), 9);
  const std::vector<float> x = RandomFloats(static_cast<size_t>(m * k), 10, 1.0f);
  const auto p = Bf16PackedWeight::Pack(w.data(), n, k);
  for (bool avx512 : Isas()) {
    const std::vector<float> all = RunPacked(*p, x, m, nullptr, avx512);
    for (int64_t i = 0; i < m; ++i) {
      const std::vector<float> row(x.begin() + i * k, x.begin() + (i + 1) * k);
      ExpectBitEqual(RunPacked(*p, row, 1, nullptr, avx512),
                     std::vector<float>(all.begin() + i * n, all.begin() + (i + 1) * n),
                     "row " + std::to_string(i) + (avx512 ? " avx512" : " avx2"));
    }
  }
}

TEST(Bf16Packed, CpuBackendRepacksBf16AndCountsTheCopy) {
  const int64_t n = 70, k = 96;
  const std::vector<uint16_t> w = RandomBf16(static_cast<size_t>(n * k), 21);
  const std::vector<float> x = RandomFloats(static_cast<size_t>(5 * k), 22, 1.0f);
  const int64_t packed_bytes = Bf16PackedWeight::Pack(w.data(), n, k)->owned_bytes();
  for (bool batch_invariant : {true, false}) {
    CpuBackendOptions opts;  // the ISA PAGELLM_ISA asks for, else the best
    opts.batch_invariant = batch_invariant;
    CpuBackend cpu(opts);
    ASSERT_TRUE(cpu.options().repack_bf16);
    const bool avx512 = cpu.options().isa == CpuIsa::kAvx512;
    // With AMX and batch invariance off, oneDNN keeps a copy for M > 4 too.
    const bool amx = avx512 && DnnlUsesAmx() && !batch_invariant;
    const std::string what = std::string(batch_invariant ? "batch invariant" : "default") + (avx512 ? " avx512" : " avx2");
    auto prepared = cpu.PrepareLinear(TensorView{const_cast<uint16_t*>(w.data()), DType::kBF16, {n, k}}, {});
    ASSERT_TRUE(prepared.ok());
    if (amx) {
      EXPECT_GT(cpu.prepared_weight_bytes(), packed_bytes) << what;
    } else {
      EXPECT_EQ(cpu.prepared_weight_bytes(), packed_bytes) << what;
    }
    for (int64_t m : {1, 5}) {
      std::vector<float> got(static_cast<size_t>(m * n)), want(got.size());
      cpu.Linear(**prepared, x.data(), m, got.data());
      GemmBf16PackedReference(w.data(), n, k, x.data(), m, nullptr, want.data(), /*round_x_to_bf16=*/avx512);
      if (amx && m > cpu.options().gemv_max_rows) {
        // oneDNN's AMX kernel: bf16 x, fp32 sums in its own order.
        for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-3f * (1.0f + std::abs(want[i]))) << what << " at " << i;
      } else {
        ExpectBitEqual(got, want, what + " M=" + std::to_string(m));
      }
    }
    prepared->reset();
    EXPECT_EQ(cpu.prepared_weight_bytes(), 0) << what;
  }
}

// The default CpuBackend computes each row of a bf16 linear to the same bits whatever
// else shares the call, on AMX machines too (no oneDNN copy: cpu_backend.h). Qwen3-0.6B's
// shapes and tiny ones (where oneDNN's own rows change between M = 1 and M = 5).
TEST(Bf16Packed, RowsDoNotDependOnTheBatch) {
  CpuBackend cpu;
  ASSERT_TRUE(cpu.options().batch_invariant);
  struct Shape { int64_t n, k; };
  for (Shape s : {Shape{3072, 1024}, Shape{1024, 3072}, Shape{96, 64}, Shape{64, 256}}) {
    const std::vector<uint16_t> w = RandomBf16(static_cast<size_t>(s.n * s.k), 31);
    const int64_t max_m = 200;
    const std::vector<float> x = RandomFloats(static_cast<size_t>(max_m * s.k), 32, 1.0f);
    auto prepared = cpu.PrepareLinear(TensorView{const_cast<uint16_t*>(w.data()), DType::kBF16, {s.n, s.k}}, {});
    ASSERT_TRUE(prepared.ok());
    std::vector<float> alone(static_cast<size_t>(max_m * s.n));
    for (int64_t r = 0; r < max_m; ++r) cpu.Linear(**prepared, x.data() + r * s.k, 1, alone.data() + r * s.n);
    for (int64_t m : {int64_t{2}, int64_t{5}, int64_t{16}, int64_t{63}, int64_t{64}, int64_t{65}, int64_t{130}, max_m}) {
      std::vector<float> got(static_cast<size_t>(m * s.n));
      cpu.Linear(**prepared, x.data(), m, got.data());
      ExpectBitEqual(got, std::vector<float>(alone.begin(), alone.begin() + m * s.n),
                     "N=" + std::to_string(s.n) + " K=" + std::to_string(s.k) + " M=" + std::to_string(m));
    }
  }
}

}  // namespace
}  // namespace pagellm
