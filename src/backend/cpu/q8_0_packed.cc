#include "backend/cpu/q8_0_packed.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "backend/cpu/int8_gemm_kernels.h"
#include "backend/cpu/q8_0_packed_kernels.h"
#include "common/status.h"

namespace pagellm {
namespace {

using q8_0_packed::PackedActs;

// Strips per OpenMP work item. The GEMV (M <= 4) runs 4 strips per register tile at
// M <= 2. The AVX-512 GEMM kernel goes over groups of 4 strips (a panel of <= 210 KB at
// K = 3072 that stays in L2 while every activation row goes over it) and prefetches the
// next group of the same item, so its items span 2 groups. Measured at 2 threads
// (kernel_bench-style, cold, medians of 10): items of 4, 8 and 16 strips are within noise
// at M = 16, and 16 loses ~15% at M = 512 on N = 1024 (4 items: coarse balance).
constexpr int64_t kStripsPerItem = 4;
constexpr int64_t kGemmStripsPerItem = 8;  // at most

template <typename T>
T* AlignedArray(int64_t count) {
  const size_t bytes = (static_cast<size_t>(count) * sizeof(T) + 63) / 64 * 64;
  return static_cast<T*>(std::aligned_alloc(64, std::max<size_t>(bytes, 64)));
}

// Strip s into the packed arrays (see the layout in q8_0_packed.h); rows[r]: row r's blocks.
void PackStrip(std::span<const BlockQ8_0* const> rows, int64_t nb, int64_t s, uint8_t* qs, uint16_t* d) {
  const int64_t n = static_cast<int64_t>(rows.size());
  const int64_t n0 = s * kQ8_0PackRows, valid = std::min(kQ8_0PackRows, n - n0);
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* q_out = qs + b * kQ8_0PackQsBytes;
    uint16_t* d_out = d + b * kQ8_0PackRows;
    for (int64_t r = 0; r < kQ8_0PackRows; ++r) {
      if (r >= valid) {  // padding row: weight 0 (stored as 128), scale 0
        for (int g = 0; g < 8; ++g) std::memset(q_out + g * 64 + r * 4, 0x80, 4);
        d_out[r] = 0;
        continue;
      }
      const BlockQ8_0& blk = rows[static_cast<size_t>(n0 + r)][b];
      for (int g = 0; g < 8; ++g) {
        uint32_t v;
        std::memcpy(&v, blk.qs + 4 * g, 4);
        v ^= 0x80808080u;  // s8 -> u8 = w + 128, byte by byte
        std::memcpy(q_out + g * 64 + r * 4, &v, 4);
      }
      d_out[r] = blk.d;
    }
  }
}

// Rows [m_begin, m_end) of x [M, K] -> q8_0 values, widened scales and -128 * block sums.
void QuantizeActs(const float* x, int64_t k, int64_t m_begin, int64_t m_end, int8_t* q, float* d, int32_t* corr,
                  bool avx512) {
  if (avx512) return q8_0_packed::QuantizeActsAvx512(x, k, m_begin, m_end, q, d, corr);
  const int64_t nb = k / kQ8_0BlockElements;
  for (int64_t m = m_begin; m < m_end; ++m) {
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t i = m * k + b * kQ8_0BlockElements;
      d[m * nb + b] = int8_gemm::QuantizeBlock(x + i, /*offset=*/false, reinterpret_cast<uint8_t*>(q + i));
      int32_t sum = 0;
      for (int j = 0; j < kQ8_0BlockElements; ++j) sum += q[i + j];
      corr[m * nb + b] = -128 * sum;
    }
  }
}

}  // namespace

std::unique_ptr<Q8_0PackedWeight> Q8_0PackedWeight::Pack(const BlockQ8_0* w, int64_t n, int64_t k) {
  const void* const parts[] = {w};
  const int64_t part_rows[] = {n};
  return PackStacked(parts, part_rows, k);
}

std::unique_ptr<Q8_0PackedWeight> Q8_0PackedWeight::PackStacked(std::span<const void* const> parts,
                                                                std::span<const int64_t> part_rows, int64_t k) {
  PAGELLM_CHECK(parts.size() == part_rows.size() && k % kQ8_0BlockElements == 0);
  std::vector<const BlockQ8_0*> rows;  // each row's first block, part after part
  for (size_t i = 0; i < parts.size(); ++i) {
    const auto* part = static_cast<const BlockQ8_0*>(parts[i]);
    for (int64_t r = 0; r < part_rows[i]; ++r) rows.push_back(part + r * (k / kQ8_0BlockElements));
  }
  const int64_t n = static_cast<int64_t>(rows.size());
  auto p = std::make_unique<Q8_0PackedWeight>();
  p->n = n;
  p->k = k;
  p->nb = k / kQ8_0BlockElements;
  p->num_strips = (n + kQ8_0PackRows - 1) / kQ8_0PackRows;
  p->qs.reset(AlignedArray<uint8_t>(p->num_strips * p->nb * kQ8_0PackQsBytes));
  p->d.reset(AlignedArray<uint16_t>(p->num_strips * p->nb * kQ8_0PackRows));
  if (p->qs == nullptr || p->d == nullptr) return nullptr;
  uint8_t* qs = p->qs.get();
  uint16_t* d = p->d.get();
  const int64_t nb = p->nb;
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < p->num_strips; ++s) {
    PackStrip(rows, nb, s, qs + s * nb * kQ8_0PackQsBytes, d + s * nb * kQ8_0PackRows);
  }
  return p;
}

void RunQ8_0Packed(const Q8_0PackedWeight& w, const float* x, int64_t num_rows, const float* bias, float* y,
                   bool avx512) {
  const LinearOutput out[] = {{y, w.n}};
  RunQ8_0PackedParts(w, x, num_rows, bias, out, avx512);
}

void RunQ8_0PackedParts(const Q8_0PackedWeight& w, const float* x, int64_t num_rows, const float* bias,
                        std::span<const LinearOutput> outs, bool avx512) {
  const auto strips = avx512 ? q8_0_packed::StripsAvx512 : q8_0_packed::StripsAvx2;
  thread_local std::vector<int8_t> q;
  thread_local std::vector<float> d;
  thread_local std::vector<int32_t> corr;
  q.resize(static_cast<size_t>(num_rows * w.k));
  d.resize(static_cast<size_t>(num_rows * w.nb));
  corr.resize(static_cast<size_t>(num_rows * w.nb));
  // Raw pointers: inside the parallel regions the thread_local names are each worker's own.
  int8_t* acts_q = q.data();
  float* acts_d = d.data();
  int32_t* acts_corr = corr.data();
  // AVX-512 GEMM items shrink toward 4 strips when there are fewer than 2 items per
  // thread. AVX2 runs all rows over its whole item, so it keeps the 4-strip panel.
  const int64_t gemm_item =
      std::clamp<int64_t>(w.num_strips / (2 * omp_get_max_threads()) / 4 * 4, kStripsPerItem, kGemmStripsPerItem);
  const int64_t per_item = num_rows <= 4 || !avx512 ? kStripsPerItem : gemm_item;
  // Work items of up to per_item strips, none across two outputs.
  thread_local std::vector<PartItem> items;
  SplitIntoItems(outs, kQ8_0PackRows, per_item, w.n, &items);
  const PartItem* item = items.data();
  const int64_t num_items = static_cast<int64_t>(items.size());
  // Not static: a thread whose core is taken by another process takes fewer items instead
  // of holding up the barrier. The GEMV's smallest runs are ~1/64 of the call, to keep the
  // overhead low at 151936 rows; the GEMM's items are long enough on their own.
  const int64_t grain = num_rows <= 4 ? std::max<int64_t>(1, num_items / 64) : 1;
  auto run_item = [&](int64_t i) {
    const LinearOutput& out = outs[static_cast<size_t>(item[i].out)];
    const PackedActs acts{.q = acts_q, .d = acts_d, .corr = acts_corr, .num_rows = num_rows, .k = w.k,
                          .nb = w.nb, .ldy = out.n, .col0 = item[i].col0};
    strips(acts, w, item[i].s_begin, item[i].s_end, bias, out.y);
  };
  // The GEMM quantizes its rows inside the same parallel region as the strips: a second
  // fork/join wakes the workers again (~50-100 us when they went to sleep), more than an
  // M = 16 GEMM takes. The GEMV quantizes its 1-4 rows before the fork, as cheap.
  if (num_rows <= 4) QuantizeActs(x, w.k, 0, num_rows, acts_q, acts_d, acts_corr, avx512);
#pragma omp parallel
  {
    if (num_rows > 4) {
#pragma omp for schedule(static)
      for (int64_t m = 0; m < num_rows; ++m) QuantizeActs(x, w.k, m, m + 1, acts_q, acts_d, acts_corr, avx512);
    }
    ShareItems(num_items, num_rows <= 4, grain, run_item);
  }
}

}  // namespace pagellm
