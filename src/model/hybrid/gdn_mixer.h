// GdnMixer: the whole Gated DeltaNet mixer core of one sequence, between the input
// projections and out_proj (docs/qwen-architectures.md §4.3-4.6): causal conv + SiLU,
// q/k l2norm, beta/g, delta rule (chunked for prefill, recurrent for short steps) and the
// gated RMSNorm. The model layer does the Linear projections around it via Backend.
//
//   // per GDN layer: mixed = in_proj_qkv(x), z = in_proj_z(x), b = in_proj_b(x), a = in_proj_a(x)
//   GdnMixerWorkspace ws(dims, max_tokens);                       // once, reused
//   GdnSequenceState st{conv_state, recurrent_state};             // this sequence's slot
//   GdnMixerForward(dims, layer_weights, num_tokens, {mixed, z, b, a}, st, ws, y);
//   out_proj(y)                                                   // y [T, nv * dv]
#pragma once

#include <cstdint>
#include <vector>

#include "model/hybrid/gdn_dims.h"

namespace pagellm {

// fp32 views of one layer's small GDN parameters (HF names under linear_attn.). GGUF
// (llama.cpp) checkpoints: pass log(-ssm_a) as a_log, and set dims.head_mapping = kTiled
// when nv != nk (the converter reorders value heads, §5.2 item 6).
struct GdnLayerWeights {
  const float* conv_weight = nullptr;  // [conv_dim, K]  conv1d.weight squeezed
  const float* a_log = nullptr;        // [nv]           A_log (HF value; GGUF ssm_a = -exp(A_log))
  const float* dt_bias = nullptr;      // [nv]
  const float* norm_weight = nullptr;  // [dv]           norm.weight, plain (not 1 + w)
  float norm_eps = 1e-6f;              // rms_norm_eps
};

// One sequence's recurrent caches for this layer (§4.8), both fp32, in/out.
struct GdnSequenceState {
  float* conv_state = nullptr;       // [K-1, conv_dim], zeros for a fresh sequence
  float* recurrent_state = nullptr;  // [nv, dk, dv],    zeros for a fresh sequence
};

// Projection outputs for the sequence's new tokens (Qwen3.5 flat layout; Qwen3-Next
// weights un-grouped with qwen3_next_layout.h).
struct GdnProjections {
  const float* mixed = nullptr;  // [T, conv_dim] = [q | k | v] before the conv
  const float* z = nullptr;      // [T, nv * dv]
  const float* b = nullptr;      // [T, nv]
  const float* a = nullptr;      // [T, nv]
};

// Reusable scratch for up to max_tokens tokens per call; allocates only in the
// constructor (fp32 conv output, beta, g, core output, per-thread chunk scratch sized for
// the OpenMP thread count at construction).
class GdnMixerWorkspace {
 public:
  GdnMixerWorkspace(const GdnDims& dims, int64_t max_tokens);
  int64_t max_tokens() const { return max_tokens_; }
  // The last call's delta-rule output before the gated norm, [T, nv, dv] (for tests and
  // intermediate-tensor dumps).
  const float* core_output() const { return core_.data(); }

 private:
  friend void GdnMixerForward(const GdnDims&, const GdnLayerWeights&, int64_t, const GdnProjections&,
                              const GdnSequenceState&, GdnMixerWorkspace&, float*);
  int64_t max_tokens_;
  std::vector<float> conv_out_, beta_, g_, core_, chunk_scratch_;
};

// Sequences with at least this many new tokens use the chunked form. Measured with
// gdn_bench (AVX-512, dk = dv = 128, ns/token/head): T=2 chunked 3560 vs recurrent 2830;
// T=4 1460 vs 2650; T=16 1350 vs 2645. The recurrence streams the whole state per token,
// the chunked form once per chunk.
inline constexpr int64_t kGdnChunkedMinTokens = 4;

// y [T, nv * dv] = gated_rmsnorm(delta_rule(conv(mixed)), z); updates `state`.
// Preconditions: 0 < T <= ws.max_tokens(); dims valid (ValidateGdnDims).
void GdnMixerForward(const GdnDims& dims, const GdnLayerWeights& weights, int64_t num_tokens,
                     const GdnProjections& proj, const GdnSequenceState& state, GdnMixerWorkspace& ws, float* y);

}  // namespace pagellm
