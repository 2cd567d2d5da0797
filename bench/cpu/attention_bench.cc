// attention_bench: CpuBackend::PagedAttention at Qwen3-0.6B's shape (nh 16, nkv 8, hd 128,
// bf16 KV, block 16):
//   decode  1 query row per sequence over a --ctx context, --seqs sequences in one batch:
//           GB/s of KV read (K and V once per layer);
//   verify  --verify-rows query rows at the end of each --ctx context (a speculative
//           verification of k + 1 = 5 positions): ms per layer against 1 row;
//   prefill --prefill query rows of one sequence over themselves (causal): ms per layer.
// Each call reads a different layer of a 28-layer cache, as the model does, so the KV is
// not served from cache. Block tables are shuffled (scattered blocks, as in real use).
// Not a test: numbers depend on machine load (printed first); prints the median and the
// best of --reps passes over the 28 layers (the best is the one least disturbed by other
// processes on a shared machine).
//
//   build-x/src/backend/cpu/attention_bench [--ctx 8192] [--seqs 1] [--verify-rows 5] [--prefill 512] [--reps 5] [--heads 16 --kv-heads 8]
//   build-x/src/backend/cpu/attention_bench --fingerprint   # hash of output bits (PAGELLM_ISA=avx2 too)
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

constexpr int64_t kLayers = 28, kHeadDim = 128, kBlock = 16;
int64_t num_heads = 16, num_kv_heads = 8;  // --heads / --kv-heads (Qwen3-0.6B's by default)

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct Timing {
  double median, best;  // seconds per layer
};

// Seconds per layer of PagedAttention for `rows` query rows ending each of `seqs`
// contexts of `ctx` tokens (each sequence gets its own scattered blocks).
Timing TimeAttention(CpuBackend& be, const PagedKvCache& cache, int32_t ctx, int32_t rows, int32_t seqs, int reps) {
  const int32_t blocks = (ctx + kBlock - 1) / kBlock;
  std::vector<int32_t> table(static_cast<size_t>(blocks) * seqs);
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), std::mt19937(1));
  std::vector<int32_t> qsl = {0}, lens;
  for (int32_t s = 0; s < seqs; ++s) {
    qsl.push_back(qsl.back() + rows);
    lens.push_back(ctx);
  }
  AttentionBatch batch{.query_start_loc = qsl, .seq_lens = lens, .block_tables = table, .max_blocks_per_seq = blocks};
  AttentionDims dims{.num_heads = num_heads, .num_kv_heads = num_kv_heads, .head_dim = kHeadDim,
                     .scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim))};
  std::vector<float> q(static_cast<size_t>(qsl.back() * num_heads * kHeadDim), 0.01f), out(q.size());
  std::vector<double> per_layer;
  for (int r = 0; r < reps; ++r) {
    double start = Now();
    for (int64_t l = 0; l < kLayers; ++l) be.PagedAttention(q.data(), cache.layer(l), batch, dims, out.data());
    per_layer.push_back((Now() - start) / kLayers);
  }
  std::sort(per_layer.begin(), per_layer.end());
  return {per_layer[per_layer.size() / 2], per_layer[0]};
}

// --fingerprint: a hash of the output bits of many shapes (head dims, GQA groups, row
// counts, contexts across block and segment edges, KV dtypes) on random data, so a
// kernel change meant to keep every bit can be checked: run before and after, compare.
uint64_t Fingerprint(CpuBackend& be) {
  uint64_t hash = 1469598103934665603ull;  // FNV-1a over the outputs' bytes
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (DType dtype : {DType::kBF16, DType::kF16, DType::kF32}) {
    for (int64_t hd : {64, 128, 256}) {
      for (int64_t group : {1, 2, 4, 6, 8}) {
        for (int32_t rows : {1, 2, 3, 5, 9, 40}) {
          for (int32_t ctx : {1, 7, 16, 33, 300, 530, 1100}) {
            if (ctx < rows) continue;
            const int64_t kv_heads = 2, heads = kv_heads * group, blocks = (ctx + kBlock - 1) / kBlock;
            KvCacheSpec spec{.num_layers = 1, .num_blocks = blocks, .block_size = kBlock, .num_kv_heads = kv_heads,
                             .head_dim = hd, .dtype = dtype};
            auto cache = PagedKvCache::Create(spec);
            if (!cache.ok()) continue;
            KvLayerView v = (*cache)->layer(0);
            const size_t elems = static_cast<size_t>(v.num_slots() * kv_heads * hd);
            std::vector<float> kf(elems), vf(elems);
            for (float& x : kf) x = dist(rng);
            for (float& x : vf) x = dist(rng);
            std::vector<int64_t> slots(static_cast<size_t>(v.num_slots()));
            std::iota(slots.begin(), slots.end(), 0);
            be.WriteKv(kf.data(), vf.data(), slots, v);
            std::vector<int32_t> table(static_cast<size_t>(blocks));
            std::iota(table.begin(), table.end(), 0);
            std::shuffle(table.begin(), table.end(), rng);
            std::vector<int32_t> qsl = {0, rows}, lens = {ctx};
            AttentionBatch batch{.query_start_loc = qsl, .seq_lens = lens, .block_tables = table,
                                 .max_blocks_per_seq = static_cast<int32_t>(blocks)};
            AttentionDims dims{.num_heads = heads, .num_kv_heads = kv_heads, .head_dim = hd,
                               .scale = 1.0f / std::sqrt(static_cast<float>(hd))};
            std::vector<float> q(static_cast<size_t>(rows * heads * hd)), out(q.size());
            for (float& x : q) x = dist(rng);
            be.PagedAttention(q.data(), v, batch, dims, out.data());
            const auto* bytes = reinterpret_cast<const unsigned char*>(out.data());
            for (size_t i = 0; i < out.size() * sizeof(float); ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
          }
        }
      }
    }
  }
  return hash;
}

}  // namespace

int main(int argc, char** argv) {
  int32_t ctx = 8192, prefill = 512, seqs = 1, verify_rows = 5;
  int reps = 5;
  if (argc == 2 && std::string(argv[1]) == "--fingerprint") {
    CpuBackend be(CpuBackendOptions{});
    std::printf("%016llx\n", static_cast<unsigned long long>(Fingerprint(be)));
    return 0;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--ctx") ctx = std::atoi(argv[i + 1]);
    else if (flag == "--seqs") seqs = std::max(1, std::atoi(argv[i + 1]));
    else if (flag == "--prefill") prefill = std::atoi(argv[i + 1]);
    else if (flag == "--verify-rows") verify_rows = std::atoi(argv[i + 1]);
    else if (flag == "--reps") reps = std::atoi(argv[i + 1]);
    else if (flag == "--heads") num_heads = std::atoi(argv[i + 1]);
    else if (flag == "--kv-heads") num_kv_heads = std::atoi(argv[i + 1]);
  }
  const int32_t blocks = std::max((ctx + kBlock - 1) / kBlock * seqs, (prefill + kBlock - 1) / kBlock);
  KvCacheSpec spec{.num_layers = kLayers, .num_blocks = blocks,
                   .block_size = kBlock, .num_kv_heads = num_kv_heads, .head_dim = kHeadDim, .dtype = DType::kBF16};
  auto cache = PagedKvCache::Create(spec);
  if (!cache.ok()) {
    std::fprintf(stderr, "%s\n", cache.status().ToString().c_str());
    return 1;
  }
  for (int64_t l = 0; l < kLayers; ++l) {  // bf16 0.01 everywhere: touches every page
    KvLayerView v = (*cache)->layer(l);
    const size_t elems = static_cast<size_t>(v.num_slots() * num_kv_heads * kHeadDim);
    std::fill_n(static_cast<uint16_t*>(v.k), elems, uint16_t{0x3c24});
    std::fill_n(static_cast<uint16_t*>(v.v), elems, uint16_t{0x3c24});
  }
  FILE* f = std::fopen("/proc/loadavg", "r");
  char load[64] = {};
  if (f != nullptr && std::fgets(load, sizeof(load), f) == nullptr) load[0] = 0;
  if (f != nullptr) std::fclose(f);
  std::printf("loadavg %s", load);
  CpuBackend be(CpuBackendOptions{});
  const double kv_bytes = static_cast<double>(ctx) * seqs * num_kv_heads * kHeadDim * 2 * 2;
  Timing t = TimeAttention(be, **cache, ctx, 1, seqs, reps);
  std::printf("decode  ctx=%d seqs=%d: %.3f ms/layer, %.1f GB/s of KV (best %.3f ms, %.1f GB/s)\n", ctx, seqs,
              t.median * 1e3, kv_bytes / t.median / 1e9, t.best * 1e3, kv_bytes / t.best / 1e9);
  if (verify_rows > 1) {
    const Timing v = TimeAttention(be, **cache, ctx, verify_rows, seqs, reps);
    std::printf("verify  ctx=%d seqs=%d rows=%d: %.3f ms/layer, %+.0f %% vs 1 row (best %.3f ms, %+.0f %%)\n", ctx, seqs,
                verify_rows, v.median * 1e3, 100.0 * (v.median / t.median - 1.0), v.best * 1e3,
                100.0 * (v.best / t.best - 1.0));
  }
  if (prefill > 0) {
    t = TimeAttention(be, **cache, prefill, prefill, 1, reps);
    std::printf("prefill %d rows: %.3f ms/layer (best %.3f)\n", prefill, t.median * 1e3, t.best * 1e3);
  }
  return 0;
}
