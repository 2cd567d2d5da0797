// Sharing a parallel loop's work items over the OpenMP team (the packed linears' strips,
// paged attention's (sequence, head) items), inside a parallel region:
//
//   #pragma omp parallel
//   { ShareItems(n, gemv, grain, [&](int64_t i) { ... }); }
//   std::atomic<int64_t> claimed{0};
//   #pragma omp parallel
//   { ShareItemsClaimingAhead(n, claimed, [&](int64_t i, int64_t next) { ... }); }
#pragma once

#include <atomic>
#include <cstdint>

namespace pagellm {

// Inside a parallel region: run_item(i) for every item, shared over the team, with no
// barrier at the end (nowait: the region's end is the one barrier needed; each barrier
// costs libgomp a futex system call, ~1.5 us on the 2-core VM of the benchmarks).
// The GEMV (`gemv`: 1-4 activation rows) is guided: the first thread takes half the items,
// the next a quarter, then ever smaller runs down to `grain`, so each thread reads long runs
// of consecutive records and its hardware and software prefetch streams keep going, where
// dynamic chunks of `grain` (~1/64 of the call) restarted them at every chunk. A thread
// whose core is taken by another process still takes less of the tail, as with dynamic.
// Measured with decode_pass_bench (a Qwen3-0.6B decode pass's linears, 2 threads on a
// 2-core Zen 5, guided and dynamic passes alternating in one process, 30 each): Q4_K 31 ->
// 36 GB/s, Q5_K 34 -> 40, Q4_0 35 -> 40, Q6_K 31 -> 32, Q8_0 43 -> 45.
// The GEMM's items are long and compute-bound: dynamic, one at a time.
template <typename RunItem>
void ShareItems(int64_t num_items, bool gemv, int64_t grain, const RunItem& run_item) {
  if (gemv) {
#pragma omp for schedule(guided, grain) nowait
    for (int64_t i = 0; i < num_items; ++i) run_item(i);
  } else {
#pragma omp for schedule(dynamic, 1) nowait
    for (int64_t i = 0; i < num_items; ++i) run_item(i);
  }
}

// Inside a parallel region: run_item(i, next) for every item, shared over the team as
// dynamic one-at-a-time scheduling would, except that each thread claims its next item
// before it runs the current one and tells run_item which it is (next = -1: none), so the
// current item's work can prefetch the next one's data. `claimed` starts at 0, shared.
template <typename RunItem>
void ShareItemsClaimingAhead(int64_t num_items, std::atomic<int64_t>& claimed, const RunItem& run_item) {
  int64_t i = claimed.fetch_add(1, std::memory_order_relaxed);
  while (i < num_items) {
    const int64_t next = claimed.fetch_add(1, std::memory_order_relaxed);
    run_item(i, next < num_items ? next : -1);
    i = next;
  }
}

}  // namespace pagellm
