#include "backend/cpu/bf16_packed.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/bf16_packed_kernels.h"
#include "tensor/half.h"

namespace pagellm {
namespace {

// Strips per OpenMP work item: the GEMV's register tile spans up to 4 strips, and at
// larger M a 4-strip panel (<= 384 KB at K = 3072) stays in L2 while the row tiles go
// over it.
constexpr int64_t kStripsPerItem = 4;

// Strip s of w into out (see the layout in bf16_packed.h). Pair by pair, so the writes
// are sequential and each (even, odd) pair moves as one 32-bit word.
void PackStrip(const uint16_t* w, int64_t n, int64_t k, int64_t num_pairs, int64_t s, uint16_t* out) {
  std::memset(out, 0, static_cast<size_t>(num_pairs * 2 * kBf16PackRows) * sizeof(uint16_t));
  const int64_t n0 = s * kBf16PackRows, valid = std::min(kBf16PackRows, n - n0);
  const int64_t full_pairs = k / 2;
  for (int64_t p = 0; p < full_pairs; ++p) {
    for (int64_t r = 0; r < valid; ++r) std::memcpy(out + p * 2 * kBf16PackRows + r * 2, w + (n0 + r) * k + 2 * p, 4);
  }
  if (k % 2 != 0) {  // the last pair's odd element stays 0
    for (int64_t r = 0; r < valid; ++r) out[full_pairs * 2 * kBf16PackRows + r * 2] = w[(n0 + r) * k + k - 1];
  }
}

}  // namespace

std::unique_ptr<Bf16PackedWeight> Bf16PackedWeight::Pack(const uint16_t* w, int64_t n, int64_t k) {
  auto p = std::make_unique<Bf16PackedWeight>();
  p->n = n;
  p->k = k;
  p->num_pairs = (k + 1) / 2;
  p->num_strips = (n + kBf16PackRows - 1) / kBf16PackRows;
  const size_t bytes = static_cast<size_t>(p->owned_bytes());
  p->data.reset(static_cast<uint16_t*>(std::aligned_alloc(64, std::max<size_t>((bytes + 63) / 64 * 64, 64))));
  if (p->data == nullptr) return nullptr;
  uint16_t* data = p->data.get();
  const int64_t stride = p->strip_stride(), num_pairs = p->num_pairs;
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < p->num_strips; ++s) PackStrip(w, n, k, num_pairs, s, data + s * stride);
  return p;
}

void RunBf16Packed(const Bf16PackedWeight& w, const float* x, int64_t num_rows, const float* bias, float* y,
                   bool avx512) {
  // Grow once, reuse across calls; raw pointers below (inside the parallel regions the
  // thread_local names are each worker's own).
  thread_local std::vector<uint16_t> pairs;
  thread_local std::vector<float> values;
  bf16_packed::Acts acts;
  if (avx512) {
    acts.stride = (w.k + 31) / 32 * 16;  // k padded to 32, as the conversion writes it
    const size_t count = static_cast<size_t>(num_rows * acts.stride * 2);
    if (pairs.size() < count) pairs.resize(count);
    bf16_packed::ConvertActsAvx512(x, num_rows, w.k, acts.stride, pairs.data());
    acts.pairs = reinterpret_cast<const uint32_t*>(pairs.data());
  } else if (w.k % 2 == 0) {
    acts = {.values = x, .stride = w.k / 2};  // read in place
  } else {  // a zero after each row completes its last pair
    acts.stride = (w.k + 1) / 2;
    const size_t count = static_cast<size_t>(num_rows * (w.k + 1));
    if (values.size() < count) values.resize(count);
    float* v = values.data();
    for (int64_t m = 0; m < num_rows; ++m) {
      std::copy(x + m * w.k, x + (m + 1) * w.k, v + m * (w.k + 1));
      v[m * (w.k + 1) + w.k] = 0.0f;
    }
    acts.values = v;
  }
  const auto rows = avx512 ? bf16_packed::RowsAvx512 : bf16_packed::RowsAvx2;
  const int64_t num_items = (w.num_strips + kStripsPerItem - 1) / kStripsPerItem;
  // Dynamic: a thread whose core is taken by another process takes fewer items instead
  // of holding up the barrier. Small M groups items (~64 per call) to keep the overhead
  // low at 151936 rows; at larger M each item (all rows over one panel) is long enough.
  const int64_t grain = num_rows <= 4 ? std::max<int64_t>(1, num_items / 64) : 1;
#pragma omp parallel for schedule(dynamic, grain)
  for (int64_t i = 0; i < num_items; ++i) {
    rows(acts, w, 0, num_rows, i * kStripsPerItem, std::min(w.num_strips, (i + 1) * kStripsPerItem), bias, y);
  }
}

void GemmBf16PackedReference(const uint16_t* w, int64_t n, int64_t k, const float* x, int64_t num_rows,
                             const float* bias, float* y, bool round_x_to_bf16) {
  auto xv = [&](int64_t i) { return round_x_to_bf16 ? Bf16ToF32(F32ToBf16(x[i])) : x[i]; };
  for (int64_t m = 0; m < num_rows; ++m) {
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int64_t c = 0; c < k; c += 2) {
        if (c + 1 < k) acc = std::fma(Bf16ToF32(w[j * k + c + 1]), xv(m * k + c + 1), acc);
        acc = std::fma(Bf16ToF32(w[j * k + c]), xv(m * k + c), acc);
      }
      y[m * n + j] = acc + (bias != nullptr ? bias[j] : 0.0f);
    }
  }
}

}  // namespace pagellm
