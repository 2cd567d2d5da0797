// The GDN output norm (docs/qwen-architectures.md §2.1 last bullet, §4.6): a gated
// RMSNorm that is NOT zero-centred (weight stored around 1, shape [dv], shared by all
// value heads), applied per head over dv: y = w * (o * rsqrt(mean(o^2) + eps)) * silu(z).
// The result goes through out_proj (a normal Linear, done by the caller via Backend).
//
//   GdnGatedRmsNorm(dims, T, o, z, norm_weight, 1e-6f, y);   // y may alias o
#pragma once

#include <cstdint>

#include "model/hybrid/gdn_dims.h"

namespace pagellm {

//   o, y   [T, nv, dv]  (y may alias o)
//   z      [T, nv * dv] in_proj_z output (Qwen3-Next: the ungrouped z)
//   weight [dv]         linear_attn.norm.weight, used as is (never 1 + w)
void GdnGatedRmsNorm(const GdnDims& dims, int64_t num_tokens, const float* o, const float* z,
                     const float* weight, float eps, float* y);

}  // namespace pagellm
