// ParallelFor: body(i) for i in [0, n), split statically over the OpenMP threads when
// `parallel`, else a plain loop on the calling thread that never enters OpenMP.
//
//   ParallelFor(rows, rows * dim > 16384, [&](int64_t r) { NormalizeRow(r); });
//
// Why not `#pragma omp parallel for if (cond)`: with the clause false, libgomp still forms
// a team of one and closes it with a barrier whose futex wake is a system call, made
// whether a thread waits or not. On the paravirtualized 2-core VM of the benchmarks that
// cost 1.2-1.5 us per region (a loop of 64 stores: 0.02 us), and a Qwen3-0.6B decode step
// runs ~280 such small regions (norms, rope, residual adds, KV writes): ~2 % of the step.
#pragma once

#include <cstdint>

namespace pagellm {

template <typename Body>
inline void ParallelFor(int64_t n, bool parallel, Body&& body) {
  if (!parallel) {
    for (int64_t i = 0; i < n; ++i) body(i);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) body(i);
}

}  // namespace pagellm
