// Tensor names: Hugging Face (safetensors) <-> llama.cpp GGUF, for dense qwen2 / qwen3.
//
//   HfToGgufTensorName("qwen3", "model.layers.3.self_attn.q_norm.weight")  -> "blk.3.attn_q_norm.weight"
//   GgufToHfTensorName("qwen2", "blk.0.attn_q.bias")                      -> "model.layers.0.self_attn.q_proj.bias"
//
// Names with no GGUF counterpart (e.g. "model.rotary_emb.inv_freq") or not used by the
// architecture (q_norm in qwen2) are NotFound, so a converter can decide to skip or fail.
// The data itself needs no transformation for these architectures: GGUF ne is the reverse
// of the PyTorch shape with the same bytes, and Qwen uses NeoX RoPE (no q/k permutation).
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace pagellm {

// `arch` is the GGUF architecture: "qwen2" or "qwen3".
StatusOr<std::string> HfToGgufTensorName(std::string_view arch, std::string_view hf_name);
StatusOr<std::string> GgufToHfTensorName(std::string_view arch, std::string_view gguf_name);

}  // namespace pagellm
