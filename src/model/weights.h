// ModelWeights: named views of every tensor a dense Qwen2/Qwen3 forward pass reads.
//
// Produced by the loaders (safetensors, GGUF, dummy) and consumed by the model code.
// All views are row-major in PyTorch order: a linear layer is [out_features, in_features].
// Optional tensors (biases, q/k norms) are empty views when absent.
// Invariant after BindWeights/LoadModel: every non-empty view has dtype `dtype`.
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
};

struct ModelWeights {
  TensorView embed_tokens;  // [V, H]
  std::vector<LayerWeights> layers;
  TensorView norm;     // [H]
  TensorView lm_head;  // [V, H]; same data as embed_tokens when tied
  DType dtype = DType::kBF16;  // element type shared by every view

  // Keeps the memory behind the views alive (mapped files, allocated buffers).
  std::vector<std::shared_ptr<const void>> storage;
};

}  // namespace pagellm
