// Int8 linear layers of the CPU backend: Q8_0 weights read in place from the model file
// and W8A8 weights quantized at load; picks the kernel (AVX2 / AVX-512 VNNI GEMV; for
// M > gemv_max_rows the Q8_0 GEMM, or oneDNN s8 x s8 -> s32 for W8A8) and quantizes
// activations.
// Numerics are those of the reference backend (backend/int8_quant.h); see int8_gemv.h.
//
//   PAGELLM_ASSIGN_OR_RETURN(auto w8, W8A8Weight::Create(weight, /*use_dnnl=*/true));
//   RunW8A8(*w8, x, num_rows, bias, y, {.avx512 = true, .gemv_max_rows = 4});
//   RunQ8_0(q8_weight_view, x, num_rows, bias, y, {.avx512 = true});
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/cpu/dnnl_int8_matmul.h"
#include "common/status.h"
#include "tensor/tensor_view.h"

namespace pagellm {

// Per-output-channel symmetric int8 copy of a float weight [N, K].
struct W8A8Weight {
  int64_t n = 0, k = 0, k_padded = 0;   // k_padded = K rounded up to 64
  std::vector<int8_t> q;                // [n, k_padded], zero padded
  std::vector<int32_t> row_sum;         // [n] sum_k q[n, k]
  std::vector<float> scale;             // [n] amax / 127 of each weight row
  std::unique_ptr<DnnlInt8Matmul> dnnl;  // packed copy for large M; may be null

  // Bytes of the copies above (the memory plan counts them).
  int64_t owned_bytes() const;

  // weight [N, K] bf16/f16/f32, quantized here; or kQ8_S (already int8 per channel), whose
  // codes and scales are kept as they are: InvalidArgument when a row's blocks do not share
  // one scale (ReadQ8_SRowScales). use_dnnl=false skips the oneDNN copy.
  static StatusOr<std::unique_ptr<W8A8Weight>> Create(const TensorView& weight, bool use_dnnl);
};

struct Int8KernelChoice {
  bool avx512 = false;          // AVX-512 VNNI kernels (else AVX2)
  int64_t gemv_max_rows = 4;    // W8A8: more rows go to oneDNN when available
};

// y [M, N] = x [M, K] · W^T (+ bias [N] fp32, or null).
void RunW8A8(const W8A8Weight& w, const float* x, int64_t num_rows, const float* bias, float* y,
             const Int8KernelChoice& choice);

// weight: kQ8_0 [N, K]. y [M, N] = x · W^T (+ bias). M <= gemv_max_rows runs the GEMV,
// larger M the register-blocked GEMM (int8_gemm.h; PAGELLM_Q8_0_GEMM=0 turns it off).
void RunQ8_0(const TensorView& weight, const float* x, int64_t num_rows, const float* bias, float* y,
             const Int8KernelChoice& choice);

}  // namespace pagellm
