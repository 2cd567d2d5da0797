// Causal depthwise conv1d + SiLU of a GDN layer (docs/qwen-architectures.md §4.3 step 1).
//
// Runs over all conv_dim channels of the pre-conv `mixed` = [q | k | v] projection (never
// over z, b or a). Each sequence carries a conv state of its last K-1 inputs, read at the
// start (zeros for a fresh sequence) and overwritten with the newest K-1 inputs at the
// end, so splitting a sequence anywhere gives the same outputs as one call.
//
//   std::vector<float> conv_state(dims.conv_state_floats(), 0.0f);  // fresh sequence
//   GdnCausalConvSilu(dims, mixed, num_tokens, conv_weight, conv_state.data(), conv_out);
#pragma once

#include <cstdint>

#include "model/hybrid/gdn_dims.h"

namespace pagellm {

// out[t, ch] = silu( sum_{i<K} weight[ch, i] * in[t - (K-1) + i, ch] ), where in[s] for
// s < 0 is conv_state row K-1+s (the newest input multiplies tap K-1).
//   x          [T, conv_dim]   pre-conv inputs of this sequence's new tokens
//   weight     [conv_dim, K]   HF conv1d.weight [conv_dim, 1, K] squeezed (no bias)
//   conv_state [K-1, conv_dim] in/out, oldest row first
//   out        [T, conv_dim]   must not alias x
// Allocation-free; parallel over tokens for large T.
void GdnCausalConvSilu(const GdnDims& dims, const float* x, int64_t num_tokens, const float* weight,
                       float* conv_state, float* out);

}  // namespace pagellm
