// DnnlMatmul: one linear layer's weight packed for oneDNN's matmul (the prefill path).
//
// Weights [N, K] are reordered once, at load, into the blocked layout oneDNN picks for
// `format_tag::any`; the packed layout does not depend on M, so one copy serves every
// batch size. Primitives are cached per M (oneDNN's global primitive cache makes the
// first creation for a shape already shared across layers cheap).
//   bf16 weights: x is rounded to bf16, bf16 x bf16 -> f32 (vdpbf16ps / AMX kernels).
//   f16 weights:  widened to f32 at load (oneDNN 2.6 has no f16 CPU matmul), f32 math.
//   f32 weights:  f32 x f32 -> f32.
//
//   PAGELLM_ASSIGN_OR_RETURN(auto mm, DnnlMatmul::Create(weight));
//   if (!mm->Run(x, num_rows, y)) { /* use another kernel */ }
#pragma once

#include <cstdint>
#include <memory>

#include "common/status.h"
#include "tensor/tensor_view.h"

namespace pagellm {

// True when oneDNN runs AMX kernels here (the CPU has AMX and the OS grants its tile
// state): then its bf16 matmul beats any AVX-512 kernel for prefill-sized M.
bool DnnlUsesAmx();

// True when oneDNN has an exact int8 dot product here (VNNI, AVX-512 or AVX). Without
// it, its s8 matmul falls back to vpmaddubsw, whose int16 pair sums saturate on full-range
// int8 weights: measured on an AVX2-only Zen 3, errors of up to 0.17 on outputs of ~0.5.
bool DnnlHasExactInt8();

class DnnlMatmul {
 public:
  // weight [N, K] bf16/f16/f32. Fails (Unimplemented/Internal) when oneDNN cannot
  // handle the shape or dtype; callers then keep using their own kernels.
  static StatusOr<std::unique_ptr<DnnlMatmul>> Create(const TensorView& weight);
  ~DnnlMatmul();

  // y [M, N] = x [M, K] · W^T, no bias. Returns false when no primitive could be
  // created for this M (the caller falls back).
  bool Run(const float* x, int64_t num_rows, float* y);

  size_t packed_bytes() const;

 private:
  struct Impl;
  explicit DnnlMatmul(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagellm
