#include "backend/cpu/int8_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <vector>

#include "backend/cpu/int8_gemm_kernels.h"
#include "tensor/half.h"

namespace pagellm {

namespace int8_gemm {

// One block of 32 activations -> 32 int8 (xor 0x80 when `offset`) and the widened scale,
// the same bytes as QuantizeRowQ8_0: amax, d = fp16(amax / 127), q = rne(x * (127 / amax))
// (vcvtps2dq rounds to nearest even, like std::nearbyint in the default environment).
float QuantizeBlock(const float* x, bool offset, uint8_t* q) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 v[4], amax = _mm256_setzero_ps();
  for (int i = 0; i < 4; ++i) {
    v[i] = _mm256_loadu_ps(x + 8 * i);
    amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, v[i]));
  }
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  const float max_abs = _mm_cvtss_f32(m);
  const uint16_t d = F32ToF16(max_abs / 127.0f);
  const __m256 id = _mm256_set1_ps(max_abs != 0.0f ? 127.0f / max_abs : 0.0f);
  __m256i n[4];
  for (int i = 0; i < 4; ++i) n[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], id));
  // packs interleave the 128-bit lanes; the permute restores element order.
  const __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(n[0], n[1]), _mm256_packs_epi32(n[2], n[3]));
  __m256i out = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  if (offset) out = _mm256_xor_si256(out, _mm256_set1_epi8(static_cast<char>(0x80)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), out);
  return F16ToF32(d);
}

}  // namespace int8_gemm

namespace {

using int8_gemm::Acts;
using int8_gemm::QuantizeBlock;
using int8_gemm::kPanelStrips;
using int8_gemm::kStripBlockBytes;
using int8_gemm::kStripRows;

struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};

// A per-thread, 64-byte aligned scratch area that only grows (OpenMP threads persist).
uint8_t* ThreadScratch(size_t bytes) {
  thread_local std::unique_ptr<uint8_t, FreeDeleter> buf;
  thread_local size_t capacity = 0;
  if (capacity < bytes) {
    capacity = (bytes + 4095) / 4096 * 4096;
    buf.reset(static_cast<uint8_t*>(std::aligned_alloc(64, capacity)));
  }
  return buf.get();
}

// x [M, K] -> q [M, K] (xor 0x80 when `offset`) and d [M, nb], rows in parallel.
void QuantizeActs(const float* x, int64_t num_rows, int64_t k, bool offset, uint8_t* q, float* d) {
  const int64_t nb = k / kQ8_0BlockElements;
#pragma omp parallel for schedule(static)
  for (int64_t m = 0; m < num_rows; ++m) {
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t i = m * k + b * kQ8_0BlockElements;
      d[m * nb + b] = QuantizeBlock(x + i, offset, q + i);
    }
  }
}

}  // namespace

void GemmQ8_0(const Q8_0GemmArgs& a, bool avx512) {
  const int8_gemm::Q8_0GemmKernels kernels =
      avx512 ? int8_gemm::Q8_0GemmKernelsAvx512() : int8_gemm::Q8_0GemmKernelsAvx2();
  const int64_t nb = a.k / kQ8_0BlockElements;
  thread_local std::vector<uint8_t> xq;
  thread_local std::vector<float> xd;
  xq.resize(static_cast<size_t>(a.num_rows * a.k));
  xd.resize(static_cast<size_t>(a.num_rows * nb));
  // Raw pointers: inside the parallel regions the thread_local names are each worker's own.
  uint8_t* xq_data = xq.data();
  float* xd_data = xd.data();
  QuantizeActs(a.x, a.num_rows, a.k, kernels.offset_acts, xq_data, xd_data);
  const Acts acts{.q = xq_data, .d = xd_data, .num_rows = a.num_rows, .k = a.k, .nb = nb};
  const int64_t num_strips = (a.n + kStripRows - 1) / kStripRows;
  const int64_t num_panels = (num_strips + kPanelStrips - 1) / kPanelStrips;
  const size_t panel_bytes = static_cast<size_t>(kPanelStrips * nb * kStripBlockBytes);
  // Dynamic: a thread that loses its core (another process) takes fewer panels instead
  // of holding up the whole call.
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t p = 0; p < num_panels; ++p) {
    const int64_t s0 = p * kPanelStrips, ns = std::min(kPanelStrips, num_strips - s0);
    uint8_t* panel = ThreadScratch(panel_bytes);
    kernels.pack(a.w, a.n, nb, s0 * kStripRows, ns, panel);
    kernels.panel(acts, panel, ns, s0 * kStripRows, a.n, a.bias, a.y);
  }
}

void GemmQ8_0Reference(const Q8_0GemmArgs& a) {
  const int64_t nb = a.k / kQ8_0BlockElements;
  std::vector<BlockQ8_0> xq(static_cast<size_t>(nb));
  for (int64_t m = 0; m < a.num_rows; ++m) {
    QuantizeRowQ8_0(a.x + m * a.k, a.k, xq.data());
    for (int64_t n = 0; n < a.n; ++n) {
      float acc = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        const BlockQ8_0& wb = a.w[n * nb + b];
        const BlockQ8_0& xb = xq[static_cast<size_t>(b)];
        int32_t dot = 0;
        for (int i = 0; i < kQ8_0BlockElements; ++i) dot += int32_t{wb.qs[i]} * int32_t{xb.qs[i]};
        acc = std::fma(static_cast<float>(dot), F16ToF32(wb.d) * F16ToF32(xb.d), acc);
      }
      a.y[m * a.n + n] = acc + (a.bias ? a.bias[n] : 0.0f);
    }
  }
}

}  // namespace pagellm
