// decode_pass_bench: a decode step's linears, one row, in model order over a whole
// model's distinct k-quant matrices (Qwen3-0.6B shapes, 28 layers: far past the L3), one
// call per matrix (q, k, v, o, gate, up, down: 7 calls a layer) and as the engine runs
// them, the matrices that share an input stacked into one call (CpuBackend's
// PrepareStackedLinear: q|k|v, gate|up; 4 calls a layer).
// The bytes are the same; the difference is what each call's start and end (activation
// quantization, the other thread's wake-up, the tail where one thread waits and the
// memory pipe drains) take from the read rate.
//
// --rows M runs each call on M activation rows (a decode step of M sequences: the GEMM path
// from 5 rows; PAGELLM_KQUANT_LOOKAHEAD=0 and PAGELLM_KQUANT_UNPACK=0 in alternating
// processes give its A/B figures).
//
//   build/src/backend/decode_pass_bench [--type q4_K|q5_K|q6_K|iq4_xs|q4_0|q8_0|q4_k_m] [--layers 28] [--passes 20]
//                                       [--rows 1]
// q4_k_m mixes types as llama.cpp's Q4_K_M recipe does: Q4_K, with v and down in Q6_K in
// every other layer (q|k|v then stacks across two types).
// Prints ms per pass and GB/s of weight bytes for each arrangement, alternating them.
// Not a test: numbers depend on machine load (state the CPU and the load with them).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "tensor/half.h"
#include "tensor/kquant_blocks.h"

using namespace pagellm;

namespace {

struct Matrix {
  std::vector<uint8_t> blocks;  // the file's bytes
  std::unique_ptr<LinearWeight> prepared;
  int64_t n = 0, k = 0;
  DType dtype = DType::kQ4_K;
};

// Pseudo-random codes with every block scale (the leading fp16 of Q4_K / Q5_K / IQ4_XS /
// Q4_0 blocks, the trailing one of Q6_K) set to a small value, so sums stay finite.
Matrix MakeMatrix(CpuBackend& be, DType dtype, int64_t n, int64_t k, uint64_t seed) {
  Matrix m;
  m.n = n;
  m.k = k;
  m.dtype = dtype;
  m.blocks.resize(DTypeBytes(dtype, n * k));
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  for (uint8_t& b : m.blocks) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    b = static_cast<uint8_t>(state);
  }
  const size_t block = DTypeBytes(dtype, DTypeBlockSize(dtype));
  const size_t d_at = dtype == DType::kQ6_K ? block - 2 : 0;
  const uint16_t d = F32ToF16(1e-3f);
  for (size_t off = 0; off < m.blocks.size(); off += block) std::memcpy(&m.blocks[off + d_at], &d, 2);
  TensorView view;
  view.data = m.blocks.data();
  view.dtype = dtype;
  view.shape = {n, k};
  auto prepared = be.PrepareLinear(view, TensorView{});
  if (!prepared.ok()) {
    std::fprintf(stderr, "PrepareLinear: %s\n", prepared.status().ToString().c_str());
    std::exit(1);
  }
  m.prepared = std::move(prepared).value();
  return m;
}

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

int main(int argc, char** argv) {
  DType dtype = DType::kQ4_K;
  bool q4_k_m = false;
  int layers = 28, passes = 20;
  int64_t rows = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--type" && i + 1 < argc) {
      const std::string t = argv[++i];
      dtype = t == "q8_0"     ? DType::kQ8_0
              : t == "q6_K"   ? DType::kQ6_K
              : t == "q5_K"   ? DType::kQ5_K
              : t == "q4_0"   ? DType::kQ4_0
              : t == "iq4_xs" ? DType::kIQ4_XS
                              : DType::kQ4_K;
      q4_k_m = t == "q4_k_m";
    } else if (a == "--rows" && i + 1 < argc) {
      rows = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--layers" && i + 1 < argc) {
      layers = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--passes" && i + 1 < argc) {
      passes = std::max(1, std::atoi(argv[++i]));
    }
  }
  CpuBackend be;
  const int64_t h = 1024, q = 2048, kv = 1024, inter = 3072;  // Qwen3-0.6B: k and v are [kv, h] each
  // Per layer q, k, v, o, gate, up, down; and q|k|v, gate|up stacked from the same blocks
  // (PrepareStackedLinear, as the engine prepares them).
  std::vector<Matrix> mats;
  std::vector<std::unique_ptr<LinearWeight>> qkv, gate_up;
  uint64_t seed = 1;
  auto view = [&](const Matrix& m) {
    TensorView v;
    v.data = const_cast<uint8_t*>(m.blocks.data());
    v.dtype = m.dtype;
    v.shape = {m.n, m.k};
    return v;
  };
  for (int l = 0; l < layers; ++l) {
    int index = 0;
    for (auto [n, k] : std::vector<std::pair<int64_t, int64_t>>{{q, h}, {kv, h}, {kv, h}, {h, q}, {inter, h},
                                                                 {inter, h}, {h, inter}}) {
      const bool more_bits = q4_k_m && l % 2 == 0 && (index == 2 || index == 6);  // v, down
      mats.push_back(MakeMatrix(be, more_bits ? DType::kQ6_K : dtype, n, k, seed++));
      ++index;
    }
    const Matrix* lm = &mats[mats.size() - 7];
    const TensorView qkv_views[] = {view(lm[0]), view(lm[1]), view(lm[2])}, gate_up_views[] = {view(lm[4]), view(lm[5])};
    const TensorView none[3] = {};
    auto a = be.PrepareStackedLinear(qkv_views, std::span<const TensorView>(none, 3));
    auto b = be.PrepareStackedLinear(gate_up_views, std::span<const TensorView>(none, 2));
    if (!a.ok() || !b.ok() || *a == nullptr || *b == nullptr) continue;  // no stacked form (Q8_0): separate only
    qkv.push_back(std::move(*a));
    gate_up.push_back(std::move(*b));
  }
  double bytes = 0;
  for (const Matrix& m : mats) bytes += static_cast<double>(DTypeBytes(m.dtype, m.n * m.k));
  std::vector<float> x(static_cast<size_t>(inter * rows), 0.25f), y(static_cast<size_t>((q + 2 * kv + 2 * inter) * rows));
  float* const qkv_out[] = {y.data(), y.data() + q * rows, y.data() + (q + kv) * rows};
  float* const gate_up_out[] = {y.data(), y.data() + inter * rows};
  auto separate = [&] {
    const double t0 = Now();
    for (const Matrix& m : mats) be.Linear(*m.prepared, x.data(), rows, y.data());
    return Now() - t0;
  };
  auto stacked = [&] {
    const double t0 = Now();
    for (int l = 0; l < layers; ++l) {
      const Matrix* lm = &mats[static_cast<size_t>(l) * 7];
      be.LinearStacked(*qkv[static_cast<size_t>(l)], x.data(), rows, qkv_out);
      be.Linear(*lm[3].prepared, x.data(), rows, y.data());
      be.LinearStacked(*gate_up[static_cast<size_t>(l)], x.data(), rows, gate_up_out);
      be.Linear(*lm[6].prepared, x.data(), rows, y.data());
    }
    return Now() - t0;
  };
  const bool can_stack = static_cast<int>(qkv.size()) == layers;
  separate();
  if (can_stack) stacked();
  std::vector<double> ts, tf;
  for (int p = 0; p < passes; ++p) {
    ts.push_back(separate());
    if (can_stack) tf.push_back(stacked());
  }
  std::sort(ts.begin(), ts.end());
  std::sort(tf.begin(), tf.end());
  const double ms = ts[ts.size() / 2];
  std::printf("%s, %d layers, %ld rows, %.1f MB of weights per pass, medians of %d alternating passes\n",
              q4_k_m ? "q4_k_m" : DTypeName(dtype).data(), layers, static_cast<long>(rows), bytes / 1e6, passes);
  std::printf("  separate (7 calls/layer): %.3f ms, %.1f GB/s\n", ms * 1e3, bytes / ms / 1e9);
  if (!can_stack) {
    std::printf("  stacked: not for %s (the backend stacks k-quant and repacked Q8_0 weights)\n", DTypeName(dtype).data());
    return 0;
  }
  const double mf = tf[tf.size() / 2];
  std::printf("  stacked  (4 calls/layer): %.3f ms, %.1f GB/s  (%.1f %% less time)\n", mf * 1e3, bytes / mf / 1e9,
              100.0 * (1.0 - mf / ms));
  return 0;
}
