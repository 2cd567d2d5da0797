// Packed Q4_K / Q5_K / Q6_K / Q4_0 / Q5_0 / Q4_1 / Q5_1 / IQ4_NL / Q4_Z linear (kquant_packed.h): the AVX-512 VNNI and AVX2 kernels against
// the scalar GemmKQuantReference (which reads the file's blocks, so the load-time
// rearrangement is checked too) bit for bit, over odd N (partial strips), K of 1-4
// super-blocks, M = 1..4 (GEMV tiles) and larger (GEMM tiles), with and without bias;
// blocks from llama.cpp's format built out of random bytes (every code, scale and min
// pattern) with finite fp16 scales; extreme activations (all-equal, one outlier, zero rows);
// the oracle against float math on the dequantized weights; and the memory bound.
#include "backend/cpu/kquant_packed.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/int8_gemv.h"  // CpuSupportsAvx512Vnni
#include "backend/cpu/kernel_test_data.h"
#include "backend/cpu/kquant_packed_kernels.h"
#include "backend/cpu/share_items.h"
#include "backend/cpu/packed_rows.h"
#include "backend/int8_quant.h"
#include "backend/kquant_gemm.h"
#include "tensor/half.h"
#include "tensor/kquant_blocks.h"

namespace pagellm {
namespace {

using testing::ExpectBitEqual;
using testing::ExpectStacksAsItsParts;
using testing::RandomFloats;

// n rows of k / 256 random blocks of `dtype`: random bytes, fp16 scales (and Q4_K / Q5_K mins,
// Q4_1 / Q5_1 offsets) in +-scale.
std::vector<uint8_t> RandomBlocks(DType dtype, int64_t n, int64_t k, uint32_t seed, float scale = 0.01f) {
  std::mt19937 rng(seed);
  const size_t bytes = DTypeBytes(dtype, n * k), block = DTypeBytes(dtype, DTypeBlockSize(dtype));
  std::vector<uint8_t> w(bytes);
  for (auto& b : w) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> dist(-scale, scale);
  for (size_t off = 0; off < bytes; off += block) {
    const uint16_t d = F32ToF16(dist(rng)), dmin = F32ToF16(dist(rng));
    if (dtype == DType::kQ4_K || dtype == DType::kQ5_K || dtype == DType::kQ4_1 || dtype == DType::kQ5_1) {
      std::memcpy(&w[off], &d, 2);
      std::memcpy(&w[off + 2], &dmin, 2);
    } else if (dtype != DType::kQ6_K) {
      std::memcpy(&w[off], &d, 2);
    } else {
      std::memcpy(&w[off + 208], &d, 2);
    }
  }
  return w;
}

// Every kernel choice this machine can run: AVX2; AVX-512 VNNI; the AMX tile kernels on
// the software model of the tiles (any AVX-512 VNNI machine) and on the hardware (AMX).
std::vector<KQuantKernels> Isas() {
  std::vector<KQuantKernels> isas = {KQuantKernels::kAvx2};
  if (CpuSupportsAvx512Vnni()) isas.insert(isas.end(), {KQuantKernels::kAvx512, KQuantKernels::kAmxModel});
  if (CpuSupportsAmxInt8()) isas.push_back(KQuantKernels::kAmx);
  return isas;
}

std::string IsaName(KQuantKernels k) {
  switch (k) {
    case KQuantKernels::kAvx2: return "avx2";
    case KQuantKernels::kAvx512: return "avx512";
    case KQuantKernels::kAmx: return "amx";
    case KQuantKernels::kAmxModel: return "amx-model";
  }
  return "?";
}

std::vector<float> RunPacked(const KQuantPackedWeight& w, const std::vector<float>& x, int64_t m, const float* bias,
                             KQuantKernels kernels) {
  const size_t size = static_cast<size_t>(m * w.n);
  std::vector<float> y(size + 64, -7.25f);
  RunKQuantPacked(w, x.data(), m, bias, y.data(), kernels);
  for (size_t i = size; i < y.size(); ++i) EXPECT_EQ(y[i], -7.25f) << "write past y at " << i;
  y.resize(size);
  return y;
}

std::vector<float> RunReference(DType dtype, const std::vector<uint8_t>& w, int64_t n, int64_t k,
                                const std::vector<float>& x, int64_t m, const float* bias) {
  std::vector<float> y(static_cast<size_t>(m * n));
  GemmKQuantReference(dtype, w.data(), n, k, x.data(), m, bias, y.data());
  return y;
}

class KQuantPacked : public ::testing::TestWithParam<DType> {};

TEST_P(KQuantPacked, KernelsEqualScalarReferenceBitForBit) {
  const DType dtype = GetParam();
  struct Case { int64_t m, n, k; };
  std::vector<Case> cases;
  for (int64_t m : {1, 2, 3, 4, 5, 7, 9})
    for (int64_t n : {1, 15, 16, 17, 40, 67})
      for (int64_t k : {256, 512}) cases.push_back({m, n, k});
  for (Case c : std::vector<Case>{{1, 1024, 1024}, {2, 300, 3072}, {4, 129, 1024}, {16, 100, 1024}, {33, 48, 256},
                                  {24, 1000, 512}, {64, 150, 256}, {7, 40, 2048}, {16, 70, 4096}, {50, 40, 3072}}) {
    cases.push_back(c);
  }
  if (DTypeBlockSize(dtype) == 32) {  // rows of 1 and 3 blocks
    for (Case c : std::vector<Case>{{1, 17, 32}, {3, 40, 96}, {6, 33, 96}}) cases.push_back(c);
  }
  uint32_t seed = 1;
  for (const Case& c : cases) {
    const std::vector<uint8_t> w = RandomBlocks(dtype, c.n, c.k, seed++);
    const std::vector<float> x = RandomFloats(static_cast<size_t>(c.m * c.k), seed++, 1.0f);
    const std::vector<float> bias = RandomFloats(static_cast<size_t>(c.n), seed++, 0.5f);
    const auto p = KQuantPackedWeight::Pack(dtype, w.data(), c.n, c.k);
    ASSERT_NE(p, nullptr);
    for (const float* b : {static_cast<const float*>(nullptr), bias.data()}) {
      const std::vector<float> want = RunReference(dtype, w, c.n, c.k, x, c.m, b);
      for (KQuantKernels isa : Isas()) {
        ExpectBitEqual(RunPacked(*p, x, c.m, b, isa), want,
                       ::testing::PrintToString(std::vector<int64_t>{c.m, c.n, c.k}) + " " + IsaName(isa) +
                           (b ? " bias" : ""));
      }
    }
  }
}

// The AMX tile kernels at the row counts their tiles split at (1 or 2 tiles of 16
// activation rows, the last partial; 1 or 2 strips per tile, odd strip counts), against the
// reference bit for bit (on the software model of the tiles here, and on the hardware where
// the CPU has AMX): the floats of every kernel choice are the same.
TEST_P(KQuantPacked, AmxTileRowCountsBitForBit) {
  const DType dtype = GetParam();
  uint32_t seed = 900;
  for (int64_t m : {5, 16, 17, 31, 32, 33, 50}) {
    for (int64_t n : {16, 67}) {
      for (int64_t k : {256, 768}) {
        const std::vector<uint8_t> w = RandomBlocks(dtype, n, k, seed++);
        const std::vector<float> x = RandomFloats(static_cast<size_t>(m * k), seed++, 1.0f);
        const std::vector<float> bias = RandomFloats(static_cast<size_t>(n), seed++, 0.5f);
        const auto p = KQuantPackedWeight::Pack(dtype, w.data(), n, k);
        ASSERT_NE(p, nullptr);
        const float* b = n == 67 ? bias.data() : nullptr;
        const std::vector<float> want = RunReference(dtype, w, n, k, x, m, b);
        for (KQuantKernels isa : Isas()) {
          ExpectBitEqual(RunPacked(*p, x, m, b, isa), want,
                         ::testing::PrintToString(std::vector<int64_t>{m, n, k}) + " " + IsaName(isa));
        }
      }
    }
  }
}

// Activation rows at the quantizer's edges: zeros, all equal (ties at +-127), one large
// outlier, a negative maximum, values of fp32's extremes of magnitude.
TEST_P(KQuantPacked, ActivationEdgesBitForBit) {
  const DType dtype = GetParam();
  const int64_t n = 33, k = 512, m = 7;
  const std::vector<uint8_t> w = RandomBlocks(dtype, n, k, 77, 2.0f);
  std::vector<float> x = RandomFloats(static_cast<size_t>(m * k), 78, 1.0f);
  for (int64_t i = 0; i < 256; ++i) x[static_cast<size_t>(i)] = 0.0f;            // row 0, block 0: zeros
  for (int64_t i = 256; i < 512; ++i) x[static_cast<size_t>(i)] = 0.5f;          // block 1: all equal
  x[static_cast<size_t>(k + 3)] = 1e4f;                                           // row 1: an outlier
  x[static_cast<size_t>(2 * k + 300)] = -50.0f;                                   // row 2: negative max
  for (int64_t i = 3 * k; i < 4 * k; ++i) x[static_cast<size_t>(i)] *= 1e-30f;   // row 3: tiny
  for (int64_t i = 4 * k; i < 5 * k; ++i) x[static_cast<size_t>(i)] *= 1e30f;    // row 4: huge
  for (int64_t i = 6 * k; i < 7 * k; ++i) x[static_cast<size_t>(i)] *= 1e-38f;   // row 6: -127 / max overflows
  const auto p = KQuantPackedWeight::Pack(dtype, w.data(), n, k);
  const std::vector<float> want = RunReference(dtype, w, n, k, x, m, nullptr);
  for (KQuantKernels isa : Isas()) ExpectBitEqual(RunPacked(*p, x, m, nullptr, isa), want, IsaName(isa));
}

// The AVX-512 activation quantizer against the scalar one, byte for byte: random rows,
// exact ties (x * iscale = n + 0.5), a repeated maximum of both signs, zeros.
TEST(KQuantActs, Avx512QuantizerEqualsScalar) {
  if (!CpuSupportsAvx512Vnni()) GTEST_SKIP() << "no AVX-512 on this CPU";
  const int64_t k = 1024;
  for (uint32_t seed = 0; seed < 20; ++seed) {
    std::vector<float> x = RandomFloats(static_cast<size_t>(k), seed, seed % 2 ? 3.0f : 0.01f);
    if (seed == 1) for (int64_t i = 0; i < k; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i % 255 - 127) * 0.5f;
    if (seed == 2) x[5] = 100.0f, x[7] = -100.0f;
    if (seed == 3) for (int64_t i = 256; i < 512; ++i) x[static_cast<size_t>(i)] = 0.0f;
    std::vector<int8_t> q1(k), q2(k);
    std::vector<float> d1(k / 256), d2(k / 256);
    std::vector<int32_t> s1(k / 16), s2(k / 16);
    QuantizeRowQ8_K(x.data(), k, q1.data(), d1.data(), s1.data());
    kquant_packed::QuantizeRowQ8_KAvx512(x.data(), k, q2.data(), d2.data(), s2.data());
    EXPECT_EQ(q1, q2) << seed;
    EXPECT_EQ(s1, s2) << seed;
    for (size_t b = 0; b < d1.size(); ++b) EXPECT_EQ(std::memcmp(&d1[b], &d2[b], 4), 0) << seed << " block " << b;
  }
}

// The oracle itself against float math on the dequantized weights and the quantized
// activations (llama.cpp's definition of the product): agreement to fp32 rounding.
TEST_P(KQuantPacked, ReferenceMatchesDequantizedProduct) {
  const DType dtype = GetParam();
  const int64_t n = 20, k = 768;
  const std::vector<uint8_t> w = RandomBlocks(dtype, n, k, 5);
  const std::vector<float> x = RandomFloats(static_cast<size_t>(k), 6, 1.0f);
  const std::vector<float> got = RunReference(dtype, w, n, k, x, 1, nullptr);
  // The activations as the product sees them: q8_K (per 256) for the k-quants, q8_0 blocks
  // (per 32) for the 32-value types.
  const int64_t ablock = DTypeBlockSize(dtype) == 32 ? 32 : 256;
  std::vector<int8_t> q(static_cast<size_t>(k));
  std::vector<float> d(static_cast<size_t>(k / ablock));
  if (ablock == 256) {
    std::vector<int32_t> bsum(static_cast<size_t>(k / 16));
    QuantizeRowQ8_K(x.data(), k, q.data(), d.data(), bsum.data());
  } else {
    std::vector<BlockQ8_0> blocks(static_cast<size_t>(k / 32));
    QuantizeRowQ8_0(x.data(), k, blocks.data());
    for (int64_t b = 0; b < k / 32; ++b) {
      d[static_cast<size_t>(b)] = F16ToF32(blocks[static_cast<size_t>(b)].d);
      std::memcpy(q.data() + 32 * b, blocks[static_cast<size_t>(b)].qs, 32);
    }
  }
  std::vector<float> row(static_cast<size_t>(k));
  for (int64_t c = 0; c < n; ++c) {
    DequantizeRowKQuant(dtype, w.data() + DTypeBytes(dtype, c * k), k, row.data());
    double want = 0, mag = 0;
    for (int64_t i = 0; i < k; ++i) {
      const double xi = static_cast<double>(d[static_cast<size_t>(i / ablock)]) * q[static_cast<size_t>(i)];
      want += static_cast<double>(row[static_cast<size_t>(i)]) * xi;
      mag += std::fabs(static_cast<double>(row[static_cast<size_t>(i)]) * xi);
    }
    EXPECT_NEAR(got[static_cast<size_t>(c)], want, 1e-5 * mag + 1e-30) << "row " << c;
  }
}

TEST_P(KQuantPacked, PackedBytesWithinFivePercentOfTheFile) {
  const DType dtype = GetParam();
  const int64_t n = 1024, k = 1024;
  const std::vector<uint8_t> w = RandomBlocks(dtype, n, k, 9);
  const auto p = KQuantPackedWeight::Pack(dtype, w.data(), n, k);
  EXPECT_LE(static_cast<double>(p->owned_bytes()), 1.05 * static_cast<double>(w.size()));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p->data.get()) % 64, 0u);
}

// Q4_Z as AWQ / GPTQ rows give it: one (d, z) per group of `group` columns, z in 0..15.
std::vector<uint8_t> GroupedQ4_Z(int64_t n, int64_t k, int64_t group, uint32_t seed) {
  std::vector<uint8_t> w = RandomBlocks(DType::kQ4_Z, n, k, seed);
  auto* blocks = reinterpret_cast<BlockQ4_Z*>(w.data());
  std::mt19937 rng(seed + 1000);
  std::uniform_real_distribution<float> dist(1e-4f, 0.02f);
  const int64_t nb = k / 32, gb = group / 32;
  for (int64_t row = 0; row < n; ++row) {
    for (int64_t b = 0; b < nb; ++b) {
      BlockQ4_Z& blk = blocks[row * nb + b];
      if (b % gb == 0) {
        blk.d = F32ToF16(dist(rng));
        blk.z = static_cast<uint8_t>(rng() % 16);
      } else {
        blk.d = blocks[row * nb + b - b % gb].d;
        blk.z = blocks[row * nb + b - b % gb].z;
      }
      blk.reserved = 0;
    }
  }
  return w;
}

// The checkpoint's group is found at Pack and its params stored once per strip and group:
// groups of 32, 128 and the whole row (GPTQ's group_size -1) are all bit for bit the oracle's.
TEST(KQuantPackedQ4_Z, GroupsFoundAndStoredOnce) {
  struct Case { int64_t m, n, k, group; };
  uint32_t seed = 300;
  for (Case c : std::vector<Case>{{1, 67, 512, 128}, {3, 40, 256, 32}, {9, 33, 384, 384}, {2, 16, 1024, 64},
                                  {5, 100, 768, 256}}) {
    const std::vector<uint8_t> w = GroupedQ4_Z(c.n, c.k, c.group, seed++);
    const auto p = KQuantPackedWeight::Pack(DType::kQ4_Z, w.data(), c.n, c.k);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->group_blocks, c.group / 32) << c.group;
    const std::vector<float> x = RandomFloats(static_cast<size_t>(c.m * c.k), seed++, 1.0f);
    const std::vector<float> want = RunReference(DType::kQ4_Z, w, c.n, c.k, x, c.m, nullptr);
    for (KQuantKernels isa : Isas()) {
      ExpectBitEqual(RunPacked(*p, x, c.m, nullptr, isa), want, "group " + std::to_string(c.group) + " " + IsaName(isa));
    }
  }
  // 4-bit codes plus fp16 scales and 4-bit zeros per group of 128 (AWQ's bytes): 1.008x.
  const int64_t n = 1024, k = 1024;
  const auto p = KQuantPackedWeight::Pack(DType::kQ4_Z, GroupedQ4_Z(n, k, 128, 9).data(), n, k);
  const double checkpoint_bytes = n * k / 2.0 + n * (k / 128) * 2.5;
  EXPECT_LE(static_cast<double>(p->owned_bytes()), 1.01 * checkpoint_bytes);
}

// Rows read back out of the packed copy (the embedding lookups of a tied lm_head) are the
// file's rows bit for bit, in full and partial strips; random bytes exercise every code,
// scale and min bit. Q4_Z (no file blocks) says it cannot.
TEST_P(KQuantPacked, RowsReadBackAsTheFileGivesThem) {
  const DType dtype = GetParam();
  const int64_t n = 37, k = 512;
  const std::vector<uint8_t> w = RandomBlocks(dtype, n, k, 11);
  const auto p = KQuantPackedWeight::Pack(dtype, w.data(), n, k);
  ASSERT_NE(p, nullptr);
  if (dtype == DType::kQ4_Z) {
    EXPECT_FALSE(PackedRowReadable(*p));
    return;
  }
  ASSERT_TRUE(PackedRowReadable(*p));
  std::vector<float> want(static_cast<size_t>(k)), got(static_cast<size_t>(k));
  for (int64_t row = 0; row < n; ++row) {
    DequantizeRowKQuant(dtype, w.data() + DTypeBytes(dtype, row * k), k, want.data());
    DequantizePackedRow(*p, row, got.data());
    ExpectBitEqual(got, want, "row " + std::to_string(row));
  }
}

// Views of stacked parts: part i is rows[i] x k of `dtype` in blocks[i], its bias bias_values[i].
void PartViews(const std::vector<std::vector<uint8_t>>& blocks, const std::vector<std::vector<float>>& bias_values,
               DType dtype, const std::vector<int64_t>& rows, int64_t k, std::vector<TensorView>& weights,
               std::vector<TensorView>& biases) {
  for (size_t i = 0; i < rows.size(); ++i) {
    TensorView w;
    w.data = const_cast<uint8_t*>(blocks[i].data());
    w.dtype = dtype;
    w.shape = {rows[i], k};
    weights.push_back(w);
    TensorView b;
    b.data = const_cast<float*>(bias_values[i].data());
    b.dtype = DType::kF32;
    b.shape = {rows[i]};
    biases.push_back(b);
  }
}

// CpuBackend's stacked linear (q|k|v, gate|up in one call) writes each part's columns into
// its own output, bit for bit what each part prepared alone gives, at GEMV and GEMM row
// counts, with and without biases; nothing is written past an output; parts of different
// 256-column types too. Types or shapes it cannot stack (a 32-column type mixed with
// another, a middle part that is not whole strips) give null.
TEST_P(KQuantPacked, StackedLinearEqualsItsPartsBitForBit) {
  const DType dtype = GetParam();
  const int64_t k = 512;
  const std::vector<int64_t> rows = {32, 16, 40};  // the last need not be whole strips
  std::vector<std::vector<uint8_t>> blocks;
  std::vector<std::vector<float>> bias_values;
  std::vector<TensorView> weights, biases;
  uint32_t seed = 31;
  for (int64_t n : rows) {
    blocks.push_back(RandomBlocks(dtype, n, k, seed++));
    bias_values.push_back(RandomFloats(static_cast<size_t>(n), seed++, 0.5f));
  }
  PartViews(blocks, bias_values, dtype, rows, k, weights, biases);
  CpuBackend be;
  // It also checks that a middle part of 40 rows (a strip across two outputs) is refused.
  ExpectStacksAsItsParts(be, weights, biases, k, seed);
  // Mixed types: the 256-column types stack with each other (one packed copy per run of one
  // type, here three runs: this type, the other, this type again), the 32-column ones with
  // nothing else.
  const DType other_type = dtype == DType::kQ6_K ? DType::kQ4_K : DType::kQ6_K;
  std::vector<uint8_t> other = RandomBlocks(other_type, rows[1], k, 99);
  TensorView mixed = weights[1];
  mixed.data = other.data();
  mixed.dtype = other_type;
  const std::vector<TensorView> mixed_parts = {weights[0], mixed, weights[2]};
  if (DTypeBlockSize(dtype) == kKQuantBlockElements) {
    ExpectStacksAsItsParts(be, mixed_parts, biases, k, seed);
  } else {
    auto mixed_result = be.PrepareStackedLinear(mixed_parts, std::vector<TensorView>(3));
    ASSERT_TRUE(mixed_result.ok());
    EXPECT_EQ(*mixed_result, nullptr);
  }
}

// AWQ / GPTQ's q|k|v and gate|up stack too: the stacked copy stores each group's (d, z) once
// over the longest run of blocks that every part repeats them over (the checkpoint's group:
// 128 columns here; 64 when one part's groups are 64), and each part's columns come out bit
// for bit what it gives prepared alone.
TEST(KQuantPackedQ4_Z, StackedPartsKeepTheirGroups) {
  const int64_t k = 512;
  for (int64_t second_group : {128, 64}) {
    const std::vector<int64_t> rows = {32, 16, 24};
    std::vector<std::vector<uint8_t>> blocks;
    std::vector<std::vector<float>> bias_values;
    std::vector<TensorView> weights, biases;
    uint32_t seed = 500;
    for (size_t i = 0; i < rows.size(); ++i) {
      blocks.push_back(GroupedQ4_Z(rows[i], k, i == 1 ? second_group : 128, seed++));
      bias_values.push_back(RandomFloats(static_cast<size_t>(rows[i]), seed++, 0.5f));
    }
    PartViews(blocks, bias_values, DType::kQ4_Z, rows, k, weights, biases);
    const void* parts[] = {blocks[0].data(), blocks[1].data(), blocks[2].data()};
    const auto packed = KQuantPackedWeight::PackStacked(DType::kQ4_Z, parts, rows, k);
    ASSERT_NE(packed, nullptr);
    EXPECT_EQ(packed->group_blocks, second_group / 32);
    CpuBackend be;
    ExpectStacksAsItsParts(be, weights, biases, k, seed);
  }
}

// One call over sections of different 256-column types (q|k in Q4_K, v in Q6_K, as in half
// a Q4_K_M file's layers), with parts, on the AMX tiles (model and hardware) and AVX-512:
// the same floats bit for bit at GEMM row counts.
TEST(KQuantPackedAmx, MixedSectionsEqualTheVnniKernels) {
  if (!CpuSupportsAvx512Vnni()) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
  const int64_t k = 512;
  const std::vector<uint8_t> qk = RandomBlocks(DType::kQ4_K, 48, k, 61), v = RandomBlocks(DType::kQ6_K, 40, k, 62);
  const auto pqk = KQuantPackedWeight::Pack(DType::kQ4_K, qk.data(), 48, k);
  const auto pv = KQuantPackedWeight::Pack(DType::kQ6_K, v.data(), 40, k);
  const std::vector<float> bias = RandomFloats(40, 63, 0.5f);
  for (int64_t m : {9, 40}) {
    const std::vector<float> x = RandomFloats(static_cast<size_t>(m * k), 64 + static_cast<uint32_t>(m), 1.0f);
    const auto run = [&](KQuantKernels kernels) {
      std::vector<float> q(static_cast<size_t>(m * 32)), kk(static_cast<size_t>(m * 16)), vv(static_cast<size_t>(m * 40));
      const LinearOutput qk_outs[] = {{q.data(), 32}, {kk.data(), 16}}, v_outs[] = {{vv.data(), 40}};
      const KQuantSection sections[] = {{.w = pqk.get(), .outs = qk_outs, .bias = nullptr},
                                        {.w = pv.get(), .outs = v_outs, .bias = bias.data()}};
      RunKQuantPackedSections(sections, x.data(), m, kernels);
      q.insert(q.end(), kk.begin(), kk.end());
      q.insert(q.end(), vv.begin(), vv.end());
      return q;
    };
    const std::vector<float> want = run(KQuantKernels::kAvx512);
    for (KQuantKernels isa : Isas()) {
      if (isa != KQuantKernels::kAvx2) ExpectBitEqual(run(isa), want, "m " + std::to_string(m) + " " + IsaName(isa));
    }
  }
}

// CpuBackend: once a linear is prepared from a table (a tied lm_head), Embedding reads the
// table's rows from the packed copy, so the view's bytes (file pages the engine then drops)
// are never read again: scribbling over them changes nothing. A shard of the table (fewer
// rows at the same address) and a destroyed linear fall back to the view.
TEST(KQuantPackedEmbedding, TiedTableRowsComeFromThePackedCopy) {
  const int64_t n = 40, k = 256;
  std::vector<uint8_t> table = RandomBlocks(DType::kQ6_K, n, k, 21);
  TensorView view;
  view.data = table.data();
  view.dtype = DType::kQ6_K;
  view.shape = {n, k};
  const std::vector<int32_t> ids = {0, 17, 39, 5, 17};
  std::vector<float> want(ids.size() * static_cast<size_t>(k));
  for (size_t t = 0; t < ids.size(); ++t) {
    DequantizeRowKQuant(DType::kQ6_K, table.data() + DTypeBytes(DType::kQ6_K, ids[t] * k), k, want.data() + t * k);
  }
  CpuBackend be;
  EXPECT_FALSE(be.EmbeddingReadsPreparedCopy(view));
  auto lm_head = be.PrepareLinear(view, TensorView{});
  ASSERT_TRUE(lm_head.ok()) << lm_head.status().ToString();
  EXPECT_TRUE(be.EmbeddingReadsPreparedCopy(view));
  TensorView shard = view;
  shard.shape = {16, k};
  EXPECT_FALSE(be.EmbeddingReadsPreparedCopy(shard));
  std::fill(table.begin(), table.end(), uint8_t{0x55});
  std::vector<float> got(want.size());
  be.Embedding(view, ids, got.data());
  ExpectBitEqual(got, want, "embedding rows after the view was overwritten");
  lm_head->reset();
  EXPECT_FALSE(be.EmbeddingReadsPreparedCopy(view));
}

// The GEMM's lookahead prefetches StripRecords' lines: they are the strips' records (in the
// first strip's group of 4), every line of them, and nothing else.
TEST(KQuantLookahead, StripRecordsAreTheStripsRecordLines) {
  for (DType dtype : {DType::kQ4_K, DType::kQ6_K, DType::kQ4_0, DType::kQ5_1}) {
    const int64_t n = 16 * 7 - 3, k = 512;  // 7 strips: groups of 4 and 3
    const std::vector<uint8_t> w = RandomBlocks(dtype, n, k, 7);
    const auto p = KQuantPackedWeight::Pack(dtype, w.data(), n, k);
    ASSERT_NE(p, nullptr);
    const auto line_of = [](const uint8_t* a) { return reinterpret_cast<uintptr_t>(a) / 64; };
    for (int64_t a = 0; a < p->num_strips; ++a) {
      for (int64_t b = a + 1; b <= p->num_strips; ++b) {
        const int64_t group_end = std::min(p->num_strips, (a / kKQuantGroupStrips + 1) * kKQuantGroupStrips);
        std::vector<uintptr_t> want;
        for (int64_t s = a; s < std::min(b, group_end); ++s) {
          for (int64_t sb = 0; sb < p->nsb; ++sb) {
            const uint8_t* r = p->record(s, sb);
            for (uintptr_t l = line_of(r); l <= line_of(r + p->record_bytes - 1); ++l) want.push_back(l);
          }
        }
        std::vector<uintptr_t> got;
        kquant_packed::RecordLines lines(kquant_packed::StripRecords(*p, a, b));
        for (const uint8_t* l = lines.Next(); l != nullptr; l = lines.Next()) {
          EXPECT_EQ(reinterpret_cast<uintptr_t>(l) % 64, 0u);
          got.push_back(line_of(l));
        }
        EXPECT_LE(static_cast<int64_t>(got.size()), lines.max_lines());
        std::sort(want.begin(), want.end());
        want.erase(std::unique(want.begin(), want.end()), want.end());
        std::sort(got.begin(), got.end());
        got.erase(std::unique(got.begin(), got.end()), got.end());
        EXPECT_EQ(got, want) << DTypeName(dtype) << " strips [" << a << ", " << b << ")";
      }
    }
    kquant_packed::RecordLines none(kquant_packed::StripRecords(*p, 3, 3));
    EXPECT_EQ(none.Next(), nullptr);
  }
}

// ShareItemsClaimingAhead runs every item once, and the `next` it names is the item that
// same thread runs next (-1 for its last).
TEST(KQuantLookahead, ClaimingAheadRunsEveryItemOnceAndNamesTheThreadsNext) {
  for (int64_t num_items : {0, 1, 2, 5, 97}) {
    std::vector<int> runs(static_cast<size_t>(num_items), 0);
    std::vector<std::vector<std::pair<int64_t, int64_t>>> by_thread(4);
    std::atomic<int64_t> claimed{0};
#pragma omp parallel num_threads(4)
    {
      auto& mine = by_thread[static_cast<size_t>(omp_get_thread_num())];
      ShareItemsClaimingAhead(num_items, claimed, [&](int64_t i, int64_t next) {
#pragma omp atomic
        ++runs[static_cast<size_t>(i)];
        mine.emplace_back(i, next);
      });
    }
    for (int64_t i = 0; i < num_items; ++i) EXPECT_EQ(runs[static_cast<size_t>(i)], 1) << "item " << i;
    for (const auto& mine : by_thread) {
      for (size_t j = 0; j < mine.size(); ++j) {
        EXPECT_EQ(mine[j].second, j + 1 < mine.size() ? mine[j + 1].first : -1) << num_items << " items";
        if (j > 0) {
          EXPECT_GT(mine[j].first, mine[j - 1].first);
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, KQuantPacked, ::testing::Values(DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_XS, DType::kQ4_0, DType::kQ5_0,
                                                           DType::kQ4_1, DType::kQ5_1, DType::kIQ4_NL, DType::kQ4_Z),
                         [](const auto& info) { return std::string(DTypeName(info.param)); });

}  // namespace
}  // namespace pagellm
