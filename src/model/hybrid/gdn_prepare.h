// Per-token pre-processing of a GDN layer after the conv (docs/qwen-architectures.md §4.3
// steps 2-5): q/k L2 normalisation, the q scale, beta and the log-decay g. Produces the
// GdnInputs view the delta-rule kernels (gdn_delta_rule.h) read.
//
//   GdnCausalConvSilu(dims, mixed, T, conv_w, conv_state, conv_out);  // [T, conv_dim]
//   GdnNormalizeQk(dims, T, conv_out);                                // in place
//   GdnComputeGates(dims, T, b, a, a_log, dt_bias, beta, g);         // [T, nv] each
//   GdnInputs in = GdnInputsFromConvOut(dims, T, conv_out, beta, g);
#pragma once

#include <cstdint>

#include "model/hybrid/gdn_dims.h"

namespace pagellm {

// What the delta-rule kernels read for one sequence: row t of q/k is [nk, dk], of v is
// [nv, dv]; rows are `*_stride` floats apart so q/k/v can point into the conv output.
// q must already be L2-normalised and scaled by dk^-0.5, k L2-normalised.
struct GdnInputs {
  int64_t num_tokens = 0;
  const float* q = nullptr;  // [T, nk, dk] with row stride q_stride
  const float* k = nullptr;  // [T, nk, dk] with row stride k_stride
  const float* v = nullptr;  // [T, nv, dv] with row stride v_stride
  int64_t q_stride = 0, k_stride = 0, v_stride = 0;
  const float* beta = nullptr;  // [T, nv] contiguous, in (0, 1)
  const float* g = nullptr;     // [T, nv] contiguous, <= 0 (decay = exp(g))
};

// In place over conv_out [T, conv_dim] = [q (nk*dk) | k (nk*dk) | v (nv*dv)] per token:
// each q and k head x <- x * rsqrt(sum(x^2) + 1e-6) (HF/FLA l2norm), then q *= dk^-0.5.
// v is untouched.
void GdnNormalizeQk(const GdnDims& dims, int64_t num_tokens, float* conv_out);

// beta = sigmoid(b); g = -exp(a_log) * softplus(a + dt_bias) with softplus(u) = u for
// u > 20 (PyTorch's threshold). b, a, beta, g: [T, nv]; a_log, dt_bias: [nv]. fp32.
void GdnComputeGates(const GdnDims& dims, int64_t num_tokens, const float* b, const float* a,
                     const float* a_log, const float* dt_bias, float* beta, float* g);

// Views q/k/v inside conv_out [T, conv_dim] (after GdnNormalizeQk).
GdnInputs GdnInputsFromConvOut(const GdnDims& dims, int64_t num_tokens, const float* conv_out,
                               const float* beta, const float* g);

}  // namespace pagellm
