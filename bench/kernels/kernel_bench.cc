// kernel_bench: Linear throughput of the CPU backend for bf16, Q8_0 and W8A8 weights.
//
//   build-x/src/backend/kernel_bench [--isa avx2|avx512] [--reps 7] [--quick] [--m 512]
//                                    [--n 151936] [--only q4_K,q6_K,q8_0r]
// Prints, per [N, K] weight (Qwen3-0.6B's q/o_proj 1024x1024 and 2048x1024, down_proj
// 1024x3072, gate/up 3072x1024 and lm_head 151936x1024):
//   * M = 1 GEMV: GB/s of weight bytes streamed (bf16 2 B, q8_0 34/32 B, w8a8 1 B per
//     element), cold cache: weights and x are flushed (clflush) before every call;
//   * M = 8, 16, 64, 512: GFLOP/s (2*M*N*K / time; int8 "GOPS" for q8_0 / w8a8), also
//     cold, and the same per CPU-second of the process (threads' CPU time, so a figure
//     that time slicing on a loaded machine disturbs less: compare kernels with it).
// and the DRAM read ceiling of the same threads (a 1 GiB AVX2 sum). Rows: bf16 (read in
// place: GEMV / oneDNN, as with PAGELLM_BF16_REPACK=0), bf16p (bf16 repacked at load,
// bf16_packed.h: one kernel for every M; the default), q8_0r (Q8_0 repacked at load,
// q8_0_packed.h: one kernel for every M), q8_0 (read in place: GEMV for M <= 4, the
// per-call-repacking GEMM above), q8_0v (the in-place GEMV for every M) and w8a8 (GEMV /
// oneDNN s8), q4_K / q6_K (random blocks rearranged as CpuBackend does at load,
// kquant_packed.h; GB/s of the file's 144/256 and 210/256 bytes per weight). Each number is the median of --reps runs; --m 512 runs one batch size
// only. Not a test: numbers depend on machine load (printed first).
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/bf16_packed.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/int8_gemv.h"
#include "backend/cpu/kquant_packed.h"
#include "backend/cpu/q8_0_packed.h"
#include "backend/int8_quant.h"
#include "tensor/half.h"

using namespace pagellm;

namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double CpuNow() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Evicts [p, p + bytes) from every cache level.
void Flush(const void* p, size_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (size_t i = 0; i < bytes; i += 64) _mm_clflush(c + i);
  _mm_mfence();
}

// Median GB/s of a parallel AVX2 read over a 1 GiB buffer (well beyond the L3).
double DramReadGbs(int reps) {
  std::vector<float> buf(size_t{1} << 28, 1.0f);  // 1 GiB
  std::vector<double> gbs;
  for (int r = 0; r < reps; ++r) {
    double t0 = Now(), total = 0;
#pragma omp parallel reduction(+ : total)
    {
      __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
#pragma omp for schedule(static)
      for (size_t i = 0; i < buf.size(); i += 16) {
        acc0 = _mm256_add_ps(acc0, _mm256_loadu_ps(buf.data() + i));
        acc1 = _mm256_add_ps(acc1, _mm256_loadu_ps(buf.data() + i + 8));
      }
      float tmp[8];
      _mm256_storeu_ps(tmp, _mm256_add_ps(acc0, acc1));
      for (float v : tmp) total += v;
    }
    double sec = Now() - t0;
    if (total < 0) std::printf("?");  // keep the sum alive
    gbs.push_back(static_cast<double>(buf.size() * sizeof(float)) / sec / 1e9);
  }
  return Median(gbs);
}

struct Weights {
  std::vector<uint16_t> bf16;
  std::vector<BlockQ8_0> q8;
  TensorView bf16_view, q8_view;
  std::vector<uint8_t> q4k, q6k;  // random block bytes with small fp16 scales (timing only)
};

// n * k / 256 random k-quant blocks whose fp16 scales (at `scale_offsets`) are 0.001.
std::vector<uint8_t> RandomKQuant(DType dtype, int64_t n, int64_t k, std::vector<size_t> scale_offsets) {
  std::mt19937 rng(static_cast<uint32_t>(n * 3 + k));
  std::vector<uint8_t> b(DTypeBytes(dtype, n * k));
  for (auto& v : b) v = static_cast<uint8_t>(rng());
  const uint16_t d = F32ToF16(0.001f);
  const size_t block = DTypeBytes(dtype, 256);
  for (size_t off = 0; off < b.size(); off += block)
    for (size_t f : scale_offsets) std::memcpy(&b[off + f], &d, 2);
  return b;
}

Weights MakeWeights(int64_t n, int64_t k) {
  Weights w;
  std::mt19937 rng(static_cast<uint32_t>(n + k));
  std::normal_distribution<float> dist(0.0f, 0.05f);
  std::vector<float> row(static_cast<size_t>(k));
  w.bf16.resize(static_cast<size_t>(n * k));
  w.q8.resize(static_cast<size_t>(n * k / 32));
  for (int64_t i = 0; i < n; ++i) {
    for (auto& v : row) v = dist(rng);
    for (int64_t j = 0; j < k; ++j) w.bf16[static_cast<size_t>(i * k + j)] = F32ToBf16(row[static_cast<size_t>(j)]);
    QuantizeRowQ8_0(row.data(), k, w.q8.data() + i * (k / 32));
  }
  w.bf16_view = TensorView{w.bf16.data(), DType::kBF16, {n, k}};
  w.q8_view = TensorView{w.q8.data(), DType::kQ8_0, {n, k}};
  w.q4k = RandomKQuant(DType::kQ4_K, n, k, {0, 2});
  w.q6k = RandomKQuant(DType::kQ6_K, n, k, {208});
  return w;
}

// Reads a 300 MiB buffer so the 260 MiB L3 holds none of the weights; for weights whose
// packed copy lives inside a LinearWeight (W8A8, oneDNN layouts) and cannot be clflushed.
void Sweep() {
  static std::vector<int64_t> sweep((300u << 20) / sizeof(int64_t), 1);
  int64_t total = 0;
#pragma omp parallel for reduction(+ : total) schedule(static)
  for (size_t i = 0; i < sweep.size(); i += 8) total += sweep[i];
  if (total == 42) std::printf("?");
}

struct Timing {
  double wall = 0, cpu = 0;  // median seconds of wall clock and of process CPU time
};

// A Q8_0 weight repacked as CpuBackend does at load (q8_0_packed.h), run directly so its
// arrays can be clflushed like the in-place weights (a cache sweep leaves part of a
// weight in this machine's large L3).
struct PackedRun {
  const Q8_0PackedWeight* w = nullptr;
  bool avx512 = false;
  const Bf16PackedWeight* bf16 = nullptr;  // or a bf16 weight packed as CpuBackend does
  const KQuantPackedWeight* kq = nullptr;   // or a k-quant weight rearranged as CpuBackend does
  KQuantKernels kq_kernels = KQuantKernels::kAvx2;
};

// One cold Linear call: `flush_bytes` of `flush_ptr` are clflushed (or the whole cache
// swept when flush_ptr is null; the packed arrays when packed.w is set, which then runs
// instead of be.Linear) and x is clflushed before each of `reps` runs.
Timing TimeCold(CpuBackend& be, const LinearWeight& w, const std::vector<float>& x, int64_t m, std::vector<float>& y,
                const void* flush_ptr, size_t flush_bytes, int reps, PackedRun packed = {}) {
  auto run = [&] {
    if (packed.w != nullptr) RunQ8_0Packed(*packed.w, x.data(), m, nullptr, y.data(), packed.avx512);
    else if (packed.bf16 != nullptr) RunBf16Packed(*packed.bf16, x.data(), m, nullptr, y.data(), packed.avx512);
    else if (packed.kq != nullptr) RunKQuantPacked(*packed.kq, x.data(), m, nullptr, y.data(), packed.kq_kernels);
    else be.Linear(w, x.data(), m, y.data());
  };
  run();  // warm-up: primitive creation, page faults
  std::vector<double> wall, cpu;
  for (int r = 0; r < reps; ++r) {
    if (packed.w != nullptr) {
      Flush(packed.w->qs.get(), static_cast<size_t>(packed.w->num_strips * packed.w->nb * kQ8_0PackQsBytes));
      Flush(packed.w->d.get(), static_cast<size_t>(packed.w->num_strips * packed.w->nb * kQ8_0PackRows * 2));
    } else if (packed.bf16 != nullptr) {
      Flush(packed.bf16->data.get(), static_cast<size_t>(packed.bf16->owned_bytes()));
    } else if (packed.kq != nullptr) {
      Flush(packed.kq->data.get(), static_cast<size_t>(packed.kq->owned_bytes()));
    } else if (flush_ptr != nullptr) {
      Flush(flush_ptr, flush_bytes);
    } else {
      Sweep();
    }
    Flush(x.data(), static_cast<size_t>(m) * static_cast<size_t>(w.in_features()) * sizeof(float));
    const double t0 = Now(), c0 = CpuNow();
    run();
    wall.push_back(Now() - t0);
    cpu.push_back(CpuNow() - c0);
  }
  return {Median(wall), Median(cpu)};
}

std::string LoadAvg() {
  std::ifstream f("/proc/loadavg");
  std::string s;
  std::getline(f, s);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CpuBackendOptions opts;
  int reps = 7;
  bool quick = false;
  int64_t only_m = 0, only_n = 0;
  std::string only_kinds;  // comma-separated row names; empty: all
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--isa" && i + 1 < argc) {
      opts.isa = opts.int8_isa = std::string(argv[++i]) == "avx2" ? CpuIsa::kAvx2 : CpuIsa::kAvx512;
    }
    if (a == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
    if (a == "--quick") quick = true;
    if (a == "--m" && i + 1 < argc) only_m = std::atoll(argv[++i]);
    if (a == "--n" && i + 1 < argc) only_n = std::atoll(argv[++i]);
    if (a == "--only" && i + 1 < argc) only_kinds = "," + std::string(argv[++i]) + ",";
  }
  CpuBackendOptions inplace_opts = opts;
  inplace_opts.repack_q8_0 = false;
  inplace_opts.repack_bf16 = false;
  CpuBackend be(inplace_opts);
  CpuBackendOptions repack_opts = opts;
  repack_opts.repack_q8_0 = true;
  CpuBackend repack_be(repack_opts);  // Q8_0 repacked at load
  CpuBackendOptions gemv_opts = inplace_opts;
  gemv_opts.gemv_max_rows = int64_t{1} << 30;
  CpuBackend gemv_be(gemv_opts);  // the q8_0 GEMV for every M (the path before the GEMM)
  std::printf("isa=%s int8_isa=%s threads=%d loadavg=%s\n", std::string(CpuIsaName(be.options().isa)).c_str(),
              std::string(CpuIsaName(be.options().int8_isa)).c_str(),
              omp_get_max_threads(), LoadAvg().c_str());
  std::printf("DRAM read ceiling: %.1f GB/s (median of %d, 1 GiB)\n", DramReadGbs(reps), reps);
  struct Shape { int64_t n, k; };
  std::vector<Shape> shapes = {{1024, 1024}, {2048, 1024}, {1024, 3072}, {3072, 1024}, {151936, 1024}};
  if (quick) shapes = {{1024, 3072}, {3072, 1024}};
  const LinearOptions int8{.quantization = LinearQuantization::kInt8};
  for (Shape s : shapes) {
    if (only_n != 0 && s.n != only_n) continue;
    Weights w = MakeWeights(s.n, s.k);
    auto wb = be.PrepareLinear(w.bf16_view, {});
    auto wq = be.PrepareLinear(w.q8_view, {});
    auto wi = be.PrepareLinear(w.bf16_view, {}, int8);
    auto wv = gemv_be.PrepareLinear(w.q8_view, {});
    auto wr = repack_be.PrepareLinear(w.q8_view, {});
    if (!wb.ok() || !wq.ok() || !wi.ok() || !wv.ok() || !wr.ok()) return 1;
    const auto packed = Q8_0PackedWeight::Pack(w.q8.data(), s.n, s.k);
    const PackedRun packed_run{packed.get(), be.options().int8_isa == CpuIsa::kAvx512 && CpuSupportsAvx512Vnni()};
    const auto bf16_packed = Bf16PackedWeight::Pack(w.bf16.data(), s.n, s.k);  // as CpuBackend does
    const PackedRun bf16_run{.avx512 = be.options().isa == CpuIsa::kAvx512, .bf16 = bf16_packed.get()};
    const bool vnni = be.options().int8_isa == CpuIsa::kAvx512 && CpuSupportsAvx512Vnni();
    const auto q4k = KQuantPackedWeight::Pack(DType::kQ4_K, w.q4k.data(), s.n, s.k);
    const auto q6k = KQuantPackedWeight::Pack(DType::kQ6_K, w.q6k.data(), s.n, s.k);
    const KQuantKernels kq_kernels = be.options().amx_int8 ? KQuantKernels::kAmx : vnni ? KQuantKernels::kAvx512 : KQuantKernels::kAvx2;
    const PackedRun q4k_run{.kq = q4k.get(), .kq_kernels = kq_kernels}, q6k_run{.kq = q6k.get(), .kq_kernels = kq_kernels};
    const double elems = static_cast<double>(s.n * s.k);
    struct Kind { const char* name; CpuBackend* be; const LinearWeight* w; const void* data; double bytes_per_elem; };
    // bf16 GEMV and q8_0 read the views in place (clflush them); q8_0r runs a packed copy
    // of its own (clflushed); W8A8 and oneDNN read packed copies inside the LinearWeight,
    // so M > 1 bf16 and w8a8 runs sweep the whole cache instead.
    std::vector<Kind> kinds = {{"bf16", &be, wb->get(), w.bf16.data(), 2.0},
                               {"bf16p", &be, wb->get(), nullptr, 2.0},
                               {"q8_0r", &repack_be, wr->get(), nullptr, 34.0 / 32.0},
                               {"q8_0", &be, wq->get(), w.q8.data(), 34.0 / 32.0},
                               {"q8_0v", &gemv_be, wv->get(), w.q8.data(), 34.0 / 32.0},
                               {"w8a8", &be, wi->get(), nullptr, 1.0},
                               {"q4_K", &be, wb->get(), nullptr, 144.0 / 256.0},
                               {"q6_K", &be, wb->get(), nullptr, 210.0 / 256.0}};
    for (int64_t m : {1, 8, 16, 64, 512}) {
      if ((s.n > 100000 && m > 64) || (only_m != 0 && m != only_m)) continue;
      std::vector<float> x(static_cast<size_t>(m * s.k)), y(static_cast<size_t>(m * s.n));
      std::mt19937 rng(7);
      std::normal_distribution<float> dist(0.0f, 1.0f);
      for (auto& v : x) v = dist(rng);
      for (const Kind& kd : kinds) {
        if (m == 1 && kd.be == &gemv_be) continue;  // same kernel as q8_0 at M = 1
        if (!only_kinds.empty() && only_kinds.find("," + std::string(kd.name) + ",") == std::string::npos) continue;
        const bool is_bf16p = std::string(kd.name) == "bf16p";
        const std::string name = kd.name;
        const PackedRun run = kd.be == &repack_be ? packed_run
                              : is_bf16p          ? bf16_run
                              : name == "q4_K"    ? q4k_run
                              : name == "q6_K"    ? q6k_run
                                                  : PackedRun{};
        const void* flush_ptr = (m > be.options().gemv_max_rows && kd.data == w.bf16.data()) ? nullptr : kd.data;
        const int r = m >= 64 ? std::max(3, reps / 2) : reps;
        const Timing t =
            TimeCold(*kd.be, *kd.w, x, m, y, flush_ptr, static_cast<size_t>(elems * kd.bytes_per_elem), r, run);
        if (m == 1) {
          std::printf("N=%6lld K=%5lld M=%3lld %-5s %8.3f ms %7.1f GB/s\n", (long long)s.n, (long long)s.k,
                      (long long)m, kd.name, t.wall * 1e3, elems * kd.bytes_per_elem / t.wall / 1e9);
        } else {
          std::printf("N=%6lld K=%5lld M=%3lld %-5s %8.3f ms %7.1f GFLOP/s %7.1f per CPU-s\n", (long long)s.n,
                      (long long)s.k, (long long)m, kd.name, t.wall * 1e3, 2.0 * m * elems / t.wall / 1e9,
                      2.0 * m * elems / t.cpu / 1e9);
        }
      }
    }
  }
  return 0;
}
