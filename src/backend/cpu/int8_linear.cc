#include "backend/cpu/int8_linear.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "backend/cpu/dnnl_matmul.h"
#include "backend/cpu/int8_gemm.h"
#include "backend/cpu/int8_gemv.h"
#include "backend/int8_quant.h"
#include "backend/reference/reference_backend.h"
#include "common/logging.h"
#include "common/parallel_for.h"
#include "tensor/half.h"
#include "tensor/kquant_blocks.h"

namespace pagellm {
namespace {

int64_t PadTo64(int64_t k) { return (k + 63) / 64 * 64; }

// PAGELLM_Q8_0_GEMM=0 sends every batch size to the GEMV (the Q8_0 path before the GEMM
// existed), so a benchmark can compare both in one build and one run.
bool Q8_0GemmEnabled() {
  static const bool enabled = [] {
    const char* env = std::getenv("PAGELLM_Q8_0_GEMM");
    return env == nullptr || std::string_view(env) != "0";
  }();
  return enabled;
}

// x [M, K] -> q [M, k_padded] (zero padded) and scale [M], rows in parallel when there are
// enough of them to pay for waking the other threads (not a 5-row verification step).
void QuantizeRowsInt8(const float* x, int64_t num_rows, int64_t k, int64_t k_padded, int8_t* q, float* scale) {
  ParallelFor(num_rows, num_rows * k > 65536, [&](int64_t m) {
    scale[m] = QuantizeRowInt8(x + m * k, k, q + m * k_padded);
    std::memset(q + m * k_padded + k, 0, static_cast<size_t>(k_padded - k));
  });
}

// dots [M, N] int32 (in y's memory) -> y = dot * s_x[m] * s_w[n] + bias[n].
void ScaleDots(const W8A8Weight& w, const float* x_scale, int64_t num_rows, const float* bias, float* y) {
  const int64_t n_out = w.n;
  ParallelFor(num_rows, num_rows * n_out > 65536, [&](int64_t m) {
    float* row = y + m * n_out;
    const float sx = x_scale[m];
    for (int64_t n = 0; n < n_out; ++n) {
      int32_t dot;
      std::memcpy(&dot, row + n, sizeof(dot));
      row[n] = static_cast<float>(dot) * (sx * w.scale[static_cast<size_t>(n)]) + (bias ? bias[n] : 0.0f);
    }
  });
}

}  // namespace

int64_t W8A8Weight::owned_bytes() const {
  return static_cast<int64_t>(q.size() + row_sum.size() * sizeof(int32_t) + scale.size() * sizeof(float) +
                              (dnnl != nullptr ? dnnl->packed_bytes() : 0));
}

StatusOr<std::unique_ptr<W8A8Weight>> W8A8Weight::Create(const TensorView& weight, bool use_dnnl) {
  auto w = std::make_unique<W8A8Weight>();
  w->n = weight.dim(0);
  w->k = weight.dim(1);
  w->k_padded = PadTo64(w->k);
  w->q.assign(static_cast<size_t>(w->n * w->k_padded), 0);
  w->row_sum.resize(static_cast<size_t>(w->n));
  w->scale.resize(static_cast<size_t>(w->n));
  W8A8Weight* p = w.get();
  const bool prequantized = weight.dtype == DType::kQ8_S;
  if (prequantized) PAGELLM_RETURN_IF_ERROR(ReadQ8_SRowScales(weight, p->scale));  // the one scan of the scales
#pragma omp parallel
  {
    std::vector<float> row(static_cast<size_t>(p->k));
#pragma omp for schedule(static)
    for (int64_t n = 0; n < p->n; ++n) {
      int8_t* q = p->q.data() + n * p->k_padded;
      if (prequantized) {
        const auto* blocks = static_cast<const BlockQ8_S*>(weight.data) + n * (p->k / 32);
        for (int64_t k = 0; k < p->k; ++k) q[k] = blocks[k / 32].qs[k % 32];
      } else {
        for (int64_t k = 0; k < p->k; ++k) row[static_cast<size_t>(k)] = LoadElementAsF32(weight.data, weight.dtype, n * p->k + k);
        p->scale[static_cast<size_t>(n)] = QuantizeRowInt8(row.data(), p->k, q);
      }
      int32_t sum = 0;
      for (int64_t k = 0; k < p->k; ++k) sum += q[k];
      p->row_sum[static_cast<size_t>(n)] = sum;
    }
  }
  // Only where oneDNN's int8 dot is exact (dnnl_matmul.h); elsewhere the GEMV kernels,
  // which widen to int32 themselves, take every batch size.
  if (use_dnnl && DnnlHasExactInt8()) {
    auto mm = DnnlInt8Matmul::Create(w->q.data(), w->n, w->k, w->k_padded);
    if (mm.ok()) {
      w->dnnl = std::move(mm).value();
    } else {
      PLOG_WARN("W8A8 linear {}: {}; using GEMV kernels for all batch sizes", ShapeToString(weight.shape),
                mm.status().ToString());
    }
  }
  return w;
}

void RunW8A8(const W8A8Weight& w, const float* x, int64_t num_rows, const float* bias, float* y,
             const Int8KernelChoice& choice) {
  thread_local std::vector<int8_t> xq;
  thread_local std::vector<float> x_scale;
  xq.resize(static_cast<size_t>(num_rows * w.k_padded));
  x_scale.resize(static_cast<size_t>(num_rows));
  QuantizeRowsInt8(x, num_rows, w.k, w.k_padded, xq.data(), x_scale.data());
  if (num_rows > choice.gemv_max_rows && w.dnnl != nullptr &&
      w.dnnl->Run(xq.data(), num_rows, w.k_padded, reinterpret_cast<int32_t*>(y))) {
    ScaleDots(w, x_scale.data(), num_rows, bias, y);
    return;
  }
  W8A8GemvArgs a{.x = xq.data(), .x_scale = x_scale.data(), .num_rows = num_rows, .k_padded = w.k_padded,
                 .w = w.q.data(), .w_sum = w.row_sum.data(), .w_scale = w.scale.data(), .n = w.n,
                 .bias = bias, .y = y};
  if (choice.avx512) {
    GemvW8A8Avx512(a);
  } else {
    GemvW8A8Avx2(a);
  }
}

void RunQ8_0(const TensorView& weight, const float* x, int64_t num_rows, const float* bias, float* y,
             const Int8KernelChoice& choice) {
  const int64_t k = weight.dim(1), nb = k / kQ8_0BlockElements;
  const auto* w = static_cast<const BlockQ8_0*>(weight.data);
  if (num_rows > choice.gemv_max_rows && Q8_0GemmEnabled()) {
    return GemmQ8_0({.x = x, .num_rows = num_rows, .k = k, .w = w, .n = weight.dim(0), .bias = bias, .y = y},
                    choice.avx512);
  }
  thread_local std::vector<BlockQ8_0> xq;
  thread_local std::vector<float> x_d;
  xq.resize(static_cast<size_t>(num_rows * nb));
  x_d.resize(static_cast<size_t>(num_rows * nb));
  // Raw pointers: inside the parallel region the thread_local names would be each
  // worker's own (empty) vectors.
  BlockQ8_0* xq_data = xq.data();
  float* xd_data = x_d.data();
  ParallelFor(num_rows, num_rows * k > 65536, [&](int64_t m) {  // as QuantizeRowsInt8
    QuantizeRowQ8_0(x + m * k, k, xq_data + m * nb);
    for (int64_t b = 0; b < nb; ++b) xd_data[m * nb + b] = F16ToF32(xq_data[m * nb + b].d);
  });
  Q8_0GemvArgs a{.x = xq_data, .x_d = xd_data, .num_rows = num_rows, .k = k,
                 .w = w, .n = weight.dim(0), .bias = bias, .y = y};
  if (choice.avx512) {
    GemvQ8_0Avx512(a);
  } else {
    GemvQ8_0Avx2(a);
  }
}

}  // namespace pagellm
