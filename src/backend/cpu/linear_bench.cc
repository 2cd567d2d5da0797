// linear_bench: throughput of CpuBackend::Linear for the shapes that dominate Qwen3-0.6B.
//
//   build-x/src/backend/cpu/linear_bench [avx2|avx512] [iters]
// Prints GB/s of weight traffic and GFLOP/s of the default split (GEMV for M <= 4,
// oneDNN above) for bf16 weights, then the GEMV-vs-oneDNN crossover (M = 1..16) that
// sets CpuBackendOptions::gemv_max_rows. Not a test: numbers depend on machine load.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "tensor/half.h"

using namespace pagellm;

namespace {

double TimeLinear(CpuBackend& be, const LinearWeight& w, const std::vector<float>& x, int64_t m,
                  std::vector<float>& y, int iters) {
  be.Linear(w, x.data(), m, y.data());  // warm-up (primitive creation, page faults)
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) be.Linear(w, x.data(), m, y.data());
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iters;
}

}  // namespace

int main(int argc, char** argv) {
  CpuBackendOptions opts;
  if (argc > 1 && std::strcmp(argv[1], "avx2") == 0) opts.isa = opts.int8_isa = CpuIsa::kAvx2;
  if (argc > 1 && std::strcmp(argv[1], "avx512") == 0) opts.isa = CpuIsa::kAvx512;
  const int iters = argc > 2 ? std::atoi(argv[2]) : 20;
  CpuBackend be(opts);
  std::printf("isa=%s gemv_max_rows=%lld\n", std::string(CpuIsaName(be.options().isa)).c_str(),
              static_cast<long long>(be.options().gemv_max_rows));
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 0.05f);
  struct Shape { int64_t n, k; };
  for (Shape s : {Shape{3072, 1024}, Shape{1024, 3072}, Shape{151936, 1024}}) {
    std::vector<uint16_t> wdata(static_cast<size_t>(s.n * s.k));
    for (auto& v : wdata) v = F32ToBf16(dist(rng));
    TensorView wv{wdata.data(), DType::kBF16, {s.n, s.k}};
    auto w = be.PrepareLinear(wv, TensorView{});
    if (!w.ok()) { std::printf("prepare failed: %s\n", w.status().ToString().c_str()); return 1; }
    std::vector<float> x(static_cast<size_t>(512 * s.k), 0.5f), y(static_cast<size_t>(512 * s.n));
    for (int64_t m : {1, 2, 4, 5, 8, 16, 64, 512}) {
      if (s.n > 100000 && m > 64) continue;
      int it = m >= 64 ? std::max(2, iters / 4) : iters;
      double sec = TimeLinear(be, **w, x, m, y, it);
      double gbs = static_cast<double>(s.n * s.k * 2) / sec / 1e9;
      double gflops = 2.0 * static_cast<double>(m * s.n * s.k) / sec / 1e9;
      std::printf("N=%6lld K=%5lld M=%4lld  %8.3f ms  %7.2f GB/s(weights)  %8.1f GFLOP/s\n",
                  static_cast<long long>(s.n), static_cast<long long>(s.k), static_cast<long long>(m), sec * 1e3,
                  gbs, gflops);
    }
  }
  // Crossover: the same calls through GEMV only and oneDNN only.
  CpuBackendOptions gemv_opts = opts, dnnl_opts = opts;
  gemv_opts.use_dnnl = false;
  dnnl_opts.gemv_max_rows = 0;
  CpuBackend gemv_be(gemv_opts), dnnl_be(dnnl_opts);
  for (Shape s : {Shape{3072, 1024}, Shape{1024, 3072}}) {
    std::vector<uint16_t> wdata(static_cast<size_t>(s.n * s.k));
    for (auto& v : wdata) v = F32ToBf16(dist(rng));
    TensorView wv{wdata.data(), DType::kBF16, {s.n, s.k}};
    auto wg = gemv_be.PrepareLinear(wv, TensorView{});
    auto wd = dnnl_be.PrepareLinear(wv, TensorView{});
    std::vector<float> x(static_cast<size_t>(16 * s.k), 0.5f), y(static_cast<size_t>(16 * s.n));
    for (int64_t m : {1, 2, 3, 4, 5, 6, 8, 16}) {
      double tg = TimeLinear(gemv_be, **wg, x, m, y, iters), td = TimeLinear(dnnl_be, **wd, x, m, y, iters);
      std::printf("crossover N=%5lld K=%5lld M=%3lld  gemv %.3f ms  onednn %.3f ms\n", static_cast<long long>(s.n),
                  static_cast<long long>(s.k), static_cast<long long>(m), tg * 1e3, td * 1e3);
    }
  }
  return 0;
}
