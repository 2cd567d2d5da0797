// decode_pass_bench: a decode step's linears, one row, in model order over a whole
// model's distinct k-quant matrices (Qwen3-0.6B shapes, 28 layers: far past the L3), as
// the engine calls them today (q, k, v, o, gate, up, down: 7 calls a layer) and with
// the matrices that share an input fused into one (q|k|v, gate|up: 4 calls a layer).
// The bytes are the same; the difference is what each call's start and end (activation
// quantization, the other thread's wake-up, the tail where one thread waits and the
// memory pipe drains) take from the read rate.
//
//   build/src/backend/decode_pass_bench [--type q4_K|q5_K|q6_K|q4_0|q8_0] [--layers 28] [--passes 20]
// Prints ms per pass and GB/s of weight bytes for each arrangement, alternating them.
// Not a test: numbers depend on machine load (state the CPU and the load with them).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
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
};

// Pseudo-random codes with every block scale (the leading fp16 of Q4_K / Q5_K / IQ4_XS /
// Q4_0 blocks, the trailing one of Q6_K) set to a small value, so sums stay finite.
Matrix MakeMatrix(CpuBackend& be, DType dtype, int64_t n, int64_t k, uint64_t seed) {
  Matrix m;
  m.n = n;
  m.k = k;
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
  int layers = 28, passes = 20;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--type" && i + 1 < argc) {
      const std::string t = argv[++i];
      dtype = t == "q8_0" ? DType::kQ8_0 : t == "q6_K" ? DType::kQ6_K : t == "q5_K" ? DType::kQ5_K : t == "q4_0" ? DType::kQ4_0 : DType::kQ4_K;
    } else if (a == "--layers" && i + 1 < argc) {
      layers = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--passes" && i + 1 < argc) {
      passes = std::max(1, std::atoi(argv[++i]));
    }
  }
  CpuBackend be;
  const int64_t h = 1024, q = 2048, kv = 1024, inter = 3072;
  // Per layer: separate (q, k, v, o, gate, up, down) and fused (qkv, o, gate|up, down).
  std::vector<Matrix> separate, fused;
  uint64_t seed = 1;
  for (int l = 0; l < layers; ++l) {
    for (auto [n, k] : std::vector<std::pair<int64_t, int64_t>>{{q, h}, {kv / 2, h}, {kv / 2, h}, {h, q}, {inter, h},
                                                                 {inter, h}, {h, inter}}) {
      separate.push_back(MakeMatrix(be, dtype, n, k, seed++));
    }
    for (auto [n, k] : std::vector<std::pair<int64_t, int64_t>>{{q + kv, h}, {h, q}, {2 * inter, h}, {h, inter}}) {
      fused.push_back(MakeMatrix(be, dtype, n, k, seed++));
    }
  }
  double bytes = 0;
  for (const Matrix& m : separate) bytes += static_cast<double>(DTypeBytes(dtype, m.n * m.k));
  std::vector<float> x(static_cast<size_t>(inter), 0.25f), y(static_cast<size_t>(2 * inter + q));
  auto pass = [&](const std::vector<Matrix>& ms) {
    const double t0 = Now();
    for (const Matrix& m : ms) be.Linear(*m.prepared, x.data(), 1, y.data());
    return Now() - t0;
  };
  pass(separate);
  pass(fused);
  std::vector<double> ts, tf;
  for (int p = 0; p < passes; ++p) {
    ts.push_back(pass(separate));
    tf.push_back(pass(fused));
  }
  std::sort(ts.begin(), ts.end());
  std::sort(tf.begin(), tf.end());
  const double ms = ts[ts.size() / 2], mf = tf[tf.size() / 2];
  std::printf("%s, %d layers, %.1f MB of weights per pass, medians of %d alternating passes\n", DTypeName(dtype).data(),
              layers, bytes / 1e6, passes);
  std::printf("  separate (7 calls/layer): %.3f ms, %.1f GB/s\n", ms * 1e3, bytes / ms / 1e9);
  std::printf("  fused    (4 calls/layer): %.3f ms, %.1f GB/s  (%.1f %% less time)\n", mf * 1e3, bytes / mf / 1e9,
              100.0 * (1.0 - mf / ms));
  return 0;
}
