// Gated-attention pieces of Qwen3-Next / Qwen3.5 full-attention layers and their
// zero-centred norms (docs/qwen-architectures.md §2.1, §3.4, §7 pitfalls 1, 4, 5).
//
// Layer flow (the caller owns projections, RoPE and attention via Backend):
//   qg = q_proj(x)                                  // [T, nh, 2*hd], per head [q | gate]
//   SplitQueryGate(qg, T, nh, hd, q, gate);         // NOT a split at nh*hd
//   ZeroCenteredRmsNorm(q, q_norm_w, T * nh, hd, eps, q);   // y = x * r * (1 + w)
//   ZeroCenteredRmsNorm(k, k_norm_w, T * nkv, hd, eps, k);
//   backend->Rope(table, positions, nh, hd, q);     // table.rotary_dim = 64 < hd = 256:
//   backend->Rope(table, positions, nkv, hd, k);    // partial NeoX RoPE, dims 64.. untouched
//   ... PagedAttention -> attn [T, nh*hd] ...
//   ApplySigmoidGate(gate, T * nh * hd, attn);      // attn *= sigmoid(gate), then o_proj
//
// The same ZeroCenteredRmsNorm serves the model norms (input/post-attention/final) of
// these architectures. A loader may instead fold 1 + w into the weight once
// (FoldZeroCenteredWeight) and use Backend::RmsNorm, as llama.cpp's converter does;
// GGUF files already store 1 + w, so they must use the plain norm.
#pragma once

#include <cstdint>

namespace pagellm {

// qg [T, nh, 2*hd] -> q [T, nh, hd] (first hd of each head), gate [T, nh, hd] (second hd).
void SplitQueryGate(const float* qg, int64_t num_tokens, int64_t num_heads, int64_t head_dim, float* q,
                    float* gate);

// y[r] = x[r] * rsqrt(mean(x[r]^2) + eps) * (1 + w) in fp32; x, y [rows, dim] (may alias),
// w [dim] stored around 0.
void ZeroCenteredRmsNorm(const float* x, const float* w, int64_t rows, int64_t dim, float eps, float* y);

// out[i] = 1 + w[i], for handing a zero-centred weight to Backend::RmsNorm.
void FoldZeroCenteredWeight(const float* w, int64_t dim, float* out);

// x[i] *= sigmoid(gate[i]) for i < n (output gate before o_proj).
void ApplySigmoidGate(const float* gate, int64_t n, float* x);

}  // namespace pagellm
