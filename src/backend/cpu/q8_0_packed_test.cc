// Packed Q8_0 linear (q8_0_packed.h): the load-time layout byte by byte, the AVX-512
// VNNI and AVX2 kernels against the scalar GemmQ8_0Reference (which reads the original
// block_q8_0 array) bit for bit over odd N (partial strips), K of 1-3 blocks and
// 1024/3072, M = 1..4 (GEMV tiles) and > 4 (GEMM tiles), with and without bias; extreme
// bytes (-128 weights, saturated activations) against hand-computed sums; GEMM work
// items of 8 strips with partial last groups (the kernel prefetches the next group of
// an item: N = 1000, 1500, 3000 at 2 threads); and the
// CpuBackend path picked by PAGELLM_ISA (ctest runs it again with avx2), including the
// bytes it reports to the memory plan.
#include "backend/cpu/q8_0_packed.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/int8_gemm.h"
#include "backend/cpu/int8_gemv.h"
#include "backend/cpu/kernel_test_data.h"
#include "backend/cpu/packed_rows.h"
#include "tensor/half.h"

namespace pagellm {
namespace {

using testing::ExpectBitEqual;
using testing::ExpectStacksAsItsParts;
using testing::QuantizeWeights;
using testing::RandomFloats;

std::vector<BlockQ8_0> RandomWeights(int64_t n, int64_t k, uint32_t seed) {
  return QuantizeWeights(RandomFloats(static_cast<size_t>(n * k), seed, 0.1f), n, k);
}

std::vector<bool> Isas() {
  std::vector<bool> isas = {false};
  if (CpuSupportsAvx512Vnni()) isas.push_back(true);
  return isas;
}

// Runs the packed kernel into a buffer with guard values past y and checks they survive.
std::vector<float> RunPacked(const Q8_0PackedWeight& w, const std::vector<float>& x, int64_t m,
                             const float* bias, bool avx512) {
  const size_t size = static_cast<size_t>(m * w.n);
  std::vector<float> y(size + 64, -7.25f);
  RunQ8_0Packed(w, x.data(), m, bias, y.data(), avx512);
  for (size_t i = size; i < y.size(); ++i) EXPECT_EQ(y[i], -7.25f) << "write past y at " << i;
  y.resize(size);
  return y;
}

std::vector<float> RunReference(const std::vector<BlockQ8_0>& w, int64_t n, int64_t k, const std::vector<float>& x,
                                int64_t m, const float* bias) {
  std::vector<float> y(static_cast<size_t>(m * n));
  GemmQ8_0Reference({.x = x.data(), .num_rows = m, .k = k, .w = w.data(), .n = n, .bias = bias, .y = y.data()});
  return y;
}

TEST(Q8_0Packed, LayoutByteByByte) {
  const int64_t n = 21, k = 64, nb = 2;  // two strips, the second with 5 valid rows
  const std::vector<BlockQ8_0> w = RandomWeights(n, k, 3);
  const auto p = Q8_0PackedWeight::Pack(w.data(), n, k);
  ASSERT_EQ(p->num_strips, 2);
  EXPECT_EQ(p->owned_bytes(), 2 * nb * 544);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p->qs.get()) % 64, 0u);
  for (int64_t s = 0; s < 2; ++s) {
    for (int64_t b = 0; b < nb; ++b) {
      for (int64_t r = 0; r < 16; ++r) {
        const int64_t row = s * 16 + r;
        const uint16_t d = p->d.get()[(s * nb + b) * 16 + r];
        EXPECT_EQ(d, row < n ? w[static_cast<size_t>(row * nb + b)].d : 0);
        for (int64_t c = 0; c < 32; ++c) {
          const uint8_t got = p->qs.get()[(s * nb + b) * 512 + (c / 4) * 64 + r * 4 + c % 4];
          const int want = row < n ? w[static_cast<size_t>(row * nb + b)].qs[c] + 128 : 128;
          ASSERT_EQ(int{got}, want) << "strip " << s << " block " << b << " row " << r << " col " << c;
        }
      }
    }
  }
}

// Rows read back out of the packed copy (a tied lm_head's embedding lookups) are the
// file's rows bit for bit, padding strip included.
TEST(Q8_0Packed, RowsReadBackAsTheFileGivesThem) {
  const int64_t n = 21, k = 96;
  const std::vector<BlockQ8_0> w = RandomWeights(n, k, 5);
  const auto p = Q8_0PackedWeight::Pack(w.data(), n, k);
  std::vector<float> want(static_cast<size_t>(k)), got(static_cast<size_t>(k));
  for (int64_t row = 0; row < n; ++row) {
    DequantizeRowQ8_0(w.data() + row * (k / 32), k, want.data());
    DequantizePackedRow(*p, row, got.data());
    ExpectBitEqual(got, want, "row " + std::to_string(row));
  }
}

TEST(Q8_0Packed, KernelsEqualScalarReferenceBitForBit) {
  struct Case { int64_t m, n, k; };
  std::vector<Case> cases;
  for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 13})
    for (int64_t n : {1, 15, 16, 17, 50, 131})
      for (int64_t k : {32, 64, 96}) cases.push_back({m, n, k});
  for (Case c : std::vector<Case>{{1, 1024, 1024}, {2, 67, 3072}, {4, 3072, 1024}, {3, 1024, 3072},
                                  {16, 1024, 1024}, {9, 77, 3072}, {7, 1000, 64}, {20, 1500, 96}, {16, 3000, 32}}) {
    cases.push_back(c);
  }
  uint32_t seed = 100;
  for (const Case& c : cases) {
    const std::vector<BlockQ8_0> w = RandomWeights(c.n, c.k, seed++);
    const std::vector<float> x = RandomFloats(static_cast<size_t>(c.m * c.k), seed++, 1.0f);
    const std::vector<float> bias = RandomFloats(static_cast<size_t>(c.n), seed++, 0.5f);
    const auto p = Q8_0PackedWeight::Pack(w.data(), c.n, c.k);
    for (const float* b : {static_cast<const float*>(nullptr), bias.data()}) {
      const std::vector<float> want = RunReference(w, c.n, c.k, x, c.m, b);
      for (bool avx512 : Isas()) {
        ExpectBitEqual(RunPacked(*p, x, c.m, b, avx512), want,
                       ::testing::PrintToString(std::vector<int64_t>{c.m, c.n, c.k}) + (avx512 ? " avx512" : " avx2") +
                           (b ? " bias" : ""));
      }
    }
  }
}

// The GEMM tiles (6 rows x 2 strips and the remainders) over M = 8..20, 33, 64, and
// activation blocks at the quantizer's edges, in the 16-block path (K = 608: blocks
// 0-15) and the single-block one (16-18): ties x * 127 / amax = n + 0.5 (rounded to
// even), amax in fp16's subnormal range, near FLT_MAX and below 1e-30 (the fallback),
// all-zero and -0.0 blocks.
TEST(Q8_0Packed, GemmTilesAndQuantizerEdgesBitForBit) {
  uint32_t seed = 900;
  for (int64_t m : {8, 9, 10, 11, 12, 14, 15, 16, 17, 18, 19, 20, 33, 64}) {
    for (int64_t n : {16, 33, 70}) {
      const int64_t k = 608;
      const std::vector<BlockQ8_0> w = RandomWeights(n, k, seed++);
      std::vector<float> x = RandomFloats(static_cast<size_t>(m * k), seed++, 1.0f);
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t b0 : {int64_t{0}, int64_t{16}}) {  // one block in each path
          float* blk = x.data() + r * k + (b0 + r % 3) * 32;
          switch (r % 6) {
            case 0:  // amax 127: x = n + 0.5 scales by exactly 1, ties to even
              for (int i = 0; i < 32; ++i) blk[i] = static_cast<float>(i % 7) - 3.5f;
              blk[5] = 127.0f;
              break;
            case 1: for (int i = 0; i < 32; ++i) blk[i] *= 1e-6f; break;   // d subnormal in fp16
            case 2: for (int i = 0; i < 32; ++i) blk[i] *= 3e37f; break;   // amax near FLT_MAX
            case 3: for (int i = 0; i < 32; ++i) blk[i] = (i % 2) ? 0.0f : -0.0f; break;
            case 4: for (int i = 0; i < 32; ++i) blk[i] *= 1e-32f; break;  // 127 / amax near overflow
            default: break;
          }
        }
      }
      const auto p = Q8_0PackedWeight::Pack(w.data(), n, k);
      const std::vector<float> want = RunReference(w, n, k, x, m, nullptr);
      for (bool avx512 : Isas()) {
        ExpectBitEqual(RunPacked(*p, x, m, nullptr, avx512), want,
                       "m=" + std::to_string(m) + " n=" + std::to_string(n) + (avx512 ? " avx512" : " avx2"));
      }
    }
  }
}

// All weights -128 or 127 (|w| = 128 is the AVX2 sign trick's edge, and the +128 bytes
// span 0 .. 255), activations that quantize to +-127: y = sum over blocks of
// dot * d_w * d_x, checked against plain integer sums written out here.
TEST(Q8_0Packed, ExtremeBytesHandComputed) {
  const int64_t n = 18, k = 64, nb = 2, m = 5;
  std::vector<BlockQ8_0> w(static_cast<size_t>(n * nb));
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t b = 0; b < nb; ++b) {
      BlockQ8_0& blk = w[static_cast<size_t>(r * nb + b)];
      blk.d = F32ToF16(0.5f);  // exact in fp16
      for (int i = 0; i < 32; ++i) blk.qs[i] = static_cast<int8_t>((r + i + b) % 2 == 0 ? -128 : 127);
    }
  }
  std::vector<float> x(static_cast<size_t>(m * k));
  for (int64_t i = 0; i < m * k; ++i) x[static_cast<size_t>(i)] = (i % 3 == 0 ? -1.0f : 1.0f) * 127.0f;
  // Each block of x: amax 127 -> d = 1, q = +-127 exactly.
  const auto p = Q8_0PackedWeight::Pack(w.data(), n, k);
  for (bool avx512 : Isas()) {
    const std::vector<float> y = RunPacked(*p, x, m, nullptr, avx512);
    for (int64_t row = 0; row < m; ++row) {
      for (int64_t col = 0; col < n; ++col) {
        double want = 0;
        for (int64_t b = 0; b < nb; ++b) {
          int64_t dot = 0;
          for (int i = 0; i < 32; ++i) {
            const int64_t xi = row * k + b * 32 + i;
            dot += int64_t{w[static_cast<size_t>(col * nb + b)].qs[i]} * (xi % 3 == 0 ? -127 : 127);
          }
          want += static_cast<double>(dot) * 0.5;
        }
        EXPECT_EQ(y[static_cast<size_t>(row * n + col)], static_cast<float>(want))
            << (avx512 ? "avx512" : "avx2") << " row " << row << " col " << col;
      }
    }
  }
}

// CpuBackend (ISA from the environment): a Q8_0 linear is repacked at PrepareLinear,
// counted in prepared_weight_bytes, and runs the packed kernels for the GEMV and GEMM.
TEST(Q8_0Packed, CpuBackendLinearUsesPackedWeights) {
  CpuBackend cpu;
  ASSERT_TRUE(cpu.options().repack_q8_0);
  const int64_t n = 83, k = 96;
  std::vector<BlockQ8_0> w = RandomWeights(n, k, 77);
  const std::vector<float> bias = RandomFloats(static_cast<size_t>(n), 78, 0.5f);
  const int64_t before = cpu.prepared_weight_bytes();
  auto lw = cpu.PrepareLinear(TensorView{w.data(), DType::kQ8_0, {n, k}}, TensorView{const_cast<float*>(bias.data()), DType::kF32, {n}});
  ASSERT_TRUE(lw.ok()) << lw.status().ToString();
  EXPECT_EQ(cpu.prepared_weight_bytes() - before, 6 * 3 * 544 + n * 4);  // 6 strips, 3 blocks; fp32 bias
  // The packed copy is what runs: scribbling over the original blocks changes nothing.
  const std::vector<BlockQ8_0> original = w;
  for (auto& blk : w) blk.qs[0] = 99;
  for (int64_t m : {1, 3, 4, 11}) {
    const std::vector<float> x = RandomFloats(static_cast<size_t>(m * k), 79 + static_cast<uint32_t>(m), 1.0f);
    std::vector<float> y(static_cast<size_t>(m * n));
    cpu.Linear(**lw, x.data(), m, y.data());
    ExpectBitEqual(y, RunReference(original, n, k, x, m, bias.data()), "cpu backend m=" + std::to_string(m));
  }
  lw->reset();
  EXPECT_EQ(cpu.prepared_weight_bytes(), before);
}

// CpuBackend's stacked Q8_0 linear (q|k|v, gate|up in one call) writes each part's columns
// into its own output, bit for bit what each part prepared alone gives, at GEMV and GEMM row
// counts (GEMM items of up to 8 strips stop at a part's end), with and without biases;
// nothing is written past an output. A middle part that is not whole strips gives null, and
// so does Q8_0 read in place (repack_q8_0 false).
TEST(Q8_0Packed, StackedLinearEqualsItsPartsBitForBit) {
  const int64_t k = 256;
  const std::vector<int64_t> rows = {512, 32, 40};  // the last need not be whole strips
  std::vector<std::vector<BlockQ8_0>> blocks;
  std::vector<std::vector<float>> bias_values;
  std::vector<TensorView> weights, biases;
  uint32_t seed = 131;
  for (int64_t n : rows) {
    blocks.push_back(RandomWeights(n, k, seed++));
    bias_values.push_back(RandomFloats(static_cast<size_t>(n), seed++, 0.5f));
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    weights.push_back(TensorView{blocks[i].data(), DType::kQ8_0, {rows[i], k}});
    biases.push_back(TensorView{bias_values[i].data(), DType::kF32, {rows[i]}});
  }
  CpuBackend be;
  ExpectStacksAsItsParts(be, weights, biases, k, seed);
  const TensorView two_biases[2] = {};
  CpuBackendOptions in_place;
  in_place.repack_q8_0 = false;
  CpuBackend be_in_place(in_place);
  auto not_packed = be_in_place.PrepareStackedLinear(std::span<const TensorView>(weights.data(), 2), two_biases);
  ASSERT_TRUE(not_packed.ok());
  EXPECT_EQ(*not_packed, nullptr);
}

}  // namespace
}  // namespace pagellm
