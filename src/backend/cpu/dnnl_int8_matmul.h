// DnnlInt8Matmul: a W8A8 linear layer's int8 weight packed for oneDNN (the prefill path).
//
// s8 activations x s8 weights -> s32, on avx512_core_vnni (or AMX where present). The
// weight [N, K] (row stride k_padded) is reordered once into oneDNN's blocked layout,
// which also carries the s8-source compensation oneDNN needs; primitives are cached per
// M. Scales are not passed to oneDNN: the caller turns the exact int32 dot products into
// floats with its per-token x per-channel scales (oneDNN 2.6 output scales cannot vary
// per row of the source).
//
//   PAGELLM_ASSIGN_OR_RETURN(auto mm, DnnlInt8Matmul::Create(q_w, n, k, k_padded));
//   if (!mm->Run(q_x, num_rows, k_padded, dots)) { /* use the GEMV kernels */ }
#pragma once

#include <cstdint>
#include <memory>

#include "common/status.h"

namespace pagellm {

class DnnlInt8Matmul {
 public:
  // w: [n, k] int8 with row stride k_padded; read only during Create.
  static StatusOr<std::unique_ptr<DnnlInt8Matmul>> Create(const int8_t* w, int64_t n, int64_t k,
                                                          int64_t k_padded);
  ~DnnlInt8Matmul();

  // dots [M, N] = x [M, K] (row stride x_stride) · W^T in exact int32. Returns false
  // when no primitive exists for this M (the caller falls back).
  bool Run(const int8_t* x, int64_t num_rows, int64_t x_stride, int32_t* dots);

  size_t packed_bytes() const;

 private:
  struct Impl;
  explicit DnnlInt8Matmul(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagellm
