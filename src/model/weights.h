// ModelWeights: named views of every tensor a Qwen forward pass reads (dense Qwen2/3,
// Qwen3-MoE, and the hybrid Qwen3-Next / Qwen3.5 / Qwen3.5-MoE).
//
// Produced by the loaders (safetensors, GGUF, dummy) and consumed by the model code.
// All views are row-major in PyTorch order: a linear layer is [out_features, in_features].
// Optional tensors (biases, q/k norms) are empty views when absent; a layer fills only
// the fields its type uses (attention or GDN mixer; dense MLP or MoE).
// Zero-centred norms (Next / 3.5) are stored as in the checkpoint (around 0); the model
// folds 1 + w at load.
// Invariant after BindWeights/LoadModel: every non-empty float view has one float dtype;
// `dtype` is that dtype, or, when linear weights are block-quantized (GGUF k-quants, HF
// int4 checkpoints as q4_z), the linears' type (layer 0's, for GGUF). Embeddings of a
// safetensors checkpoint are always float.
#pragma once

#include <memory>
#include <vector>

#include "tensor/tensor_view.h"

namespace pagellm {

struct LayerWeights {
  TensorView input_layernorm;           // [H]
  TensorView q_proj, k_proj, v_proj;    // [nh*hd, H], [nkv*hd, H], [nkv*hd, H]
  TensorView q_bias, k_bias, v_bias;    // [nh*hd], [nkv*hd], [nkv*hd]  (Qwen2)
  TensorView o_proj;                    // [H, nh*hd]
  TensorView o_bias;                    // [H]  (Qwen3 with attention_bias only)
  TensorView q_norm, k_norm;            // [hd] (Qwen3)
  TensorView post_attention_layernorm;  // [H]
  TensorView gate_proj, up_proj;        // [I, H]
  TensorView down_proj;                 // [H, I]
  // Gated attention (Next / 3.5) reuses q_proj with shape [2*nh*hd, H], per head [q | gate].

  // Gated DeltaNet mixer (linear_attn.*), docs/qwen-architectures.md §4.1.
  TensorView gdn_in_proj_qkv;   // [conv_dim, H]          (3.5)
  TensorView gdn_in_proj_z;     // [nv*dv, H]             (3.5)
  TensorView gdn_in_proj_b;     // [nv, H]                (3.5)
  TensorView gdn_in_proj_a;     // [nv, H]                (3.5)
  TensorView gdn_in_proj_qkvz;  // [2*nk*dk + 2*nv*dv, H] (Next, per-key-group layout)
  TensorView gdn_in_proj_ba;    // [2*nv, H]              (Next, per-key-group layout)
  TensorView gdn_conv1d;        // [conv_dim, 1, K]
  TensorView gdn_dt_bias;       // [nv]
  TensorView gdn_a_log;         // [nv]
  TensorView gdn_norm;          // [dv] gated RMSNorm weight (plain w, not zero-centred)
  TensorView gdn_out_proj;      // [H, nv*dv]

  // MoE block (mlp.*), §2.5.
  TensorView moe_router;                    // [E, H] mlp.gate.weight
  std::vector<TensorView> expert_gate_proj;  // E x [I_e, H] (Qwen3-MoE / Next per-expert tensors)
  std::vector<TensorView> expert_up_proj;    // E x [I_e, H]
  std::vector<TensorView> expert_down_proj;  // E x [H, I_e]
  TensorView experts_gate_up;               // [E, 2*I_e, H] (3.5-MoE fused; gate = first I_e rows)
  TensorView experts_down;                  // [E, H, I_e]   (3.5-MoE fused)
  TensorView shared_gate_proj, shared_up_proj;  // [I_s, H]
  TensorView shared_down_proj;                  // [H, I_s]
  TensorView shared_expert_gate;                // [1, H]
};

// Multi-token-prediction head (Qwen3.5 / Qwen3-Next mtp.*), loaded only when MTP
// speculation asks for it: h' = fc([norm_e(embed(x_{i+1})); norm_h(h_i)]), then full-
// attention decoder layers, then `norm`; embed_tokens and lm_head are the model's.
struct MtpWeights {
  TensorView fc;                     // [H, 2H]
  TensorView pre_fc_norm_embedding;  // [H] zero-centred
  TensorView pre_fc_norm_hidden;     // [H] zero-centred
  std::vector<LayerWeights> layers;  // gated full attention + MLP or MoE
  TensorView norm;                   // [H] zero-centred
  bool present() const { return !layers.empty(); }
};

struct ModelWeights {
  TensorView embed_tokens;  // [V, H]
  std::vector<LayerWeights> layers;
  TensorView norm;     // [H]
  TensorView lm_head;  // [V, H]; same data as embed_tokens when tied
  MtpWeights mtp;      // empty unless loaded for MTP speculation
  DType dtype = DType::kBF16;  // the float views' type, or the quantized linears' (see above)

  // Keeps the memory behind the views alive (mapped files, allocated buffers).
  std::vector<std::shared_ptr<const void>> storage;
};

}  // namespace pagellm
