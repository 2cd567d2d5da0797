#include "model/hybrid/gdn_mixer.h"

#include "common/status.h"
#include "model/hybrid/gdn_conv.h"
#include "model/hybrid/gdn_delta_rule.h"
#include "model/hybrid/gdn_gated_norm.h"
#include "model/hybrid/gdn_prepare.h"

namespace pagellm {

GdnMixerWorkspace::GdnMixerWorkspace(const GdnDims& dims, int64_t max_tokens)
    : max_tokens_(max_tokens),
      conv_out_(max_tokens * dims.conv_dim()),
      beta_(max_tokens * dims.num_v_heads),
      g_(max_tokens * dims.num_v_heads),
      core_(max_tokens * dims.value_dim()),
      chunk_scratch_(GdnChunkedScratchFloats(dims) * GdnMaxThreads()) {}

void GdnMixerForward(const GdnDims& dims, const GdnLayerWeights& weights, int64_t num_tokens,
                     const GdnProjections& proj, const GdnSequenceState& state, GdnMixerWorkspace& ws, float* y) {
  PAGELLM_CHECK(num_tokens > 0 && num_tokens <= ws.max_tokens_);
  float* conv_out = ws.conv_out_.data();
  GdnCausalConvSilu(dims, proj.mixed, num_tokens, weights.conv_weight, state.conv_state, conv_out);
  GdnNormalizeQk(dims, num_tokens, conv_out);
  GdnComputeGates(dims, num_tokens, proj.b, proj.a, weights.a_log, weights.dt_bias, ws.beta_.data(), ws.g_.data());
  const GdnInputs inputs = GdnInputsFromConvOut(dims, num_tokens, conv_out, ws.beta_.data(), ws.g_.data());
  float* core = ws.core_.data();
  if (num_tokens >= kGdnChunkedMinTokens) {
    GdnChunked(dims, inputs, state.recurrent_state, core, ws.chunk_scratch_);
  } else {
    GdnRecurrent(dims, inputs, state.recurrent_state, core);
  }
  GdnGatedRmsNorm(dims, num_tokens, core, proj.z, weights.norm_weight, weights.norm_eps, y);
}

}  // namespace pagellm
