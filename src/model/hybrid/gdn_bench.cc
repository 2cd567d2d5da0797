// gdn_bench: throughput of the gated delta rule at Qwen3.5 shapes (dk = dv = 128).
//
//   OMP_WAIT_POLICY=PASSIVE build-gdn/src/model/hybrid/gdn_bench [nv] [prefill_tokens]
//
// Decode: ns per token per value head, with the state hot in cache (one buffer) and cold
// (cycling 24 buffers, like consecutive layers). Prefill: tokens/s for one layer, chunked
// vs the token-by-token recurrence. Uses all OpenMP threads (parallel over value heads).
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "backend/cpu/cpu_isa.h"
#include "model/hybrid/gdn_delta_rule.h"
#include "model/hybrid/gdn_test_util.h"

namespace pagellm {
namespace {

double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// Per-call time. The machine is shared, so with OMP_NUM_THREADS=1 this reports process
// CPU time (immune to time slicing by other jobs); with more threads, wall time.
double Seconds(auto fn, int reps) {
  fn();  // warm-up
  const bool cpu_time = GdnMaxThreads() == 1;
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = ProcessCpuSeconds();
  for (int i = 0; i < reps; ++i) fn();
  if (cpu_time) return (ProcessCpuSeconds() - cpu_start) / reps;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / reps;
}

int Main(int argc, char** argv) {
  const int64_t nv = argc > 1 ? std::atoll(argv[1]) : 16, tokens = argc > 2 ? std::atoll(argv[2]) : 1024;
  const GdnDims dims{.num_k_heads = nv, .num_v_heads = nv, .k_head_dim = 128, .v_head_dim = 128};
  std::printf("isa %s, threads %d (%s time), nk = nv = %ld, dk = dv = 128\n", std::string(CpuIsaName(DetectCpuIsa())).c_str(),
              GdnMaxThreads(), GdnMaxThreads() == 1 ? "cpu" : "wall", static_cast<long>(nv));
  const GdnTestData d = MakeRandomGdnData(dims, tokens, 1, -1.0f);
  std::vector<float> out(tokens * dims.value_dim());
  constexpr int kLayers = 24;
  std::vector<std::vector<float>> states(kLayers, std::vector<float>(dims.state_floats(), 0.0f));
  const double hot = Seconds([&] { GdnRecurrent(dims, d.inputs(0, 1), states[0].data(), out.data()); }, 2000);
  int layer = 0;
  const double cold = Seconds(
      [&] {
        GdnRecurrent(dims, d.inputs(0, 1), states[layer].data(), out.data());
        layer = (layer + 1) % kLayers;
      },
      2000);
  std::printf("decode: %.0f ns/token/head (state hot), %.0f ns/token/head (24 states cycling); "
              "%.1f us/token/layer\n", hot * 1e9 / nv, cold * 1e9 / nv, cold * 1e6);
  std::vector<float> scratch(GdnChunkedScratchFloats(dims) * GdnMaxThreads());
  const double chunked = Seconds([&] { GdnChunked(dims, d.inputs(), states[1].data(), out.data(), scratch); }, 3);
  const double chunked16 =
      Seconds([&] { GdnChunked(dims, d.inputs(), states[1].data(), out.data(), scratch, 16); }, 3);
  const double recurrent = Seconds([&] { GdnRecurrent(dims, d.inputs(), states[2].data(), out.data()); }, 3);
  std::printf("prefill %ld tokens: chunked C=64 %.0f tokens/s (%.0f ns/token/head), C=16 %.0f tokens/s (%.0f), "
              "recurrent %.0f tokens/s\n", static_cast<long>(tokens), tokens / chunked, chunked * 1e9 / tokens / nv,
              tokens / chunked16, chunked16 * 1e9 / tokens / nv, tokens / recurrent);
  for (int64_t t : {2, 4, 8, 16, 64}) {  // crossover for kGdnChunkedMinTokens; C = 64 and 16
    const double c = Seconds([&] { GdnChunked(dims, d.inputs(0, t), states[1].data(), out.data(), scratch); }, 20);
    const double r = Seconds([&] { GdnRecurrent(dims, d.inputs(0, t), states[2].data(), out.data()); }, 20);
    std::printf("  T=%-3ld chunked %.0f ns/token/head, recurrent %.0f ns/token/head\n", static_cast<long>(t),
                c * 1e9 / t / nv, r * 1e9 / t / nv);
  }
  return 0;
}

}  // namespace
}  // namespace pagellm

int main(int argc, char** argv) { return pagellm::Main(argc, argv); }
