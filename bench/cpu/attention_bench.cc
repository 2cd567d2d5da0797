// attention_bench: CpuBackend::PagedAttention at Qwen3-0.6B's shape (nh 16, nkv 8, hd 128,
// bf16 KV, block 16), one sequence:
//   decode  1 query row over a --ctx context: GB/s of KV read (K and V once per layer);
//   prefill --prefill query rows over themselves (causal): ms per layer.
// Each call reads a different layer of a 28-layer cache, as the model does, so the KV is
// not served from cache. Not a test: numbers depend on machine load (printed first).
//
//   build-x/src/backend/cpu/attention_bench [--ctx 8192] [--prefill 512] [--reps 5]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/paged_kv_cache.h"

using namespace pagellm;

namespace {

constexpr int64_t kLayers = 28, kHeads = 16, kKvHeads = 8, kHeadDim = 128, kBlock = 16;

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Seconds per layer of PagedAttention for `rows` query rows ending a context of `ctx` tokens.
double TimeAttention(CpuBackend& be, const PagedKvCache& cache, int32_t ctx, int32_t rows, int reps) {
  const int32_t blocks = (ctx + kBlock - 1) / kBlock;
  std::vector<int32_t> table(static_cast<size_t>(blocks));
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), std::mt19937(1));
  std::vector<int32_t> qsl = {0, rows}, lens = {ctx};
  AttentionBatch batch{.query_start_loc = qsl, .seq_lens = lens, .block_tables = table, .max_blocks_per_seq = blocks};
  AttentionDims dims{.num_heads = kHeads, .num_kv_heads = kKvHeads, .head_dim = kHeadDim,
                     .scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim))};
  std::vector<float> q(static_cast<size_t>(rows * kHeads * kHeadDim), 0.01f), out(q.size());
  std::vector<double> per_layer;
  for (int r = 0; r < reps; ++r) {
    double start = Now();
    for (int64_t l = 0; l < kLayers; ++l) be.PagedAttention(q.data(), cache.layer(l), batch, dims, out.data());
    per_layer.push_back((Now() - start) / kLayers);
  }
  std::sort(per_layer.begin(), per_layer.end());
  return per_layer[per_layer.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int32_t ctx = 8192, prefill = 512;
  int reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--ctx") ctx = std::atoi(argv[i + 1]);
    else if (flag == "--prefill") prefill = std::atoi(argv[i + 1]);
    else if (flag == "--reps") reps = std::atoi(argv[i + 1]);
  }
  KvCacheSpec spec{.num_layers = kLayers, .num_blocks = (std::max(ctx, prefill) + kBlock - 1) / kBlock,
                   .block_size = kBlock, .num_kv_heads = kKvHeads, .head_dim = kHeadDim, .dtype = DType::kBF16};
  auto cache = PagedKvCache::Create(spec);
  if (!cache.ok()) {
    std::fprintf(stderr, "%s\n", cache.status().ToString().c_str());
    return 1;
  }
  for (int64_t l = 0; l < kLayers; ++l) {  // bf16 0.01 everywhere: touches every page
    KvLayerView v = (*cache)->layer(l);
    const size_t elems = static_cast<size_t>(v.num_slots() * kKvHeads * kHeadDim);
    std::fill_n(static_cast<uint16_t*>(v.k), elems, uint16_t{0x3c24});
    std::fill_n(static_cast<uint16_t*>(v.v), elems, uint16_t{0x3c24});
  }
  FILE* f = std::fopen("/proc/loadavg", "r");
  char load[64] = {};
  if (f != nullptr && std::fgets(load, sizeof(load), f) == nullptr) load[0] = 0;
  if (f != nullptr) std::fclose(f);
  std::printf("loadavg %s", load);
  CpuBackend be(CpuBackendOptions{});
  const double kv_bytes = static_cast<double>(ctx) * kKvHeads * kHeadDim * 2 * 2;
  double t = TimeAttention(be, **cache, ctx, 1, reps);
  std::printf("decode  ctx=%d: %.3f ms/layer, %.1f GB/s of KV\n", ctx, t * 1e3, kv_bytes / t / 1e9);
  t = TimeAttention(be, **cache, prefill, prefill, reps);
  std::printf("prefill %d rows: %.3f ms/layer\n", prefill, t * 1e3);
  return 0;
}
