// Tensor names: Hugging Face (safetensors) <-> llama.cpp GGUF, for dense qwen2 / qwen3, the
// Qwen3-MoE qwen3moe and the hybrid qwen3next / qwen35 / qwen35moe architectures.
//
//   HfToGgufTensorName("qwen3", "model.layers.3.self_attn.q_norm.weight")  -> "blk.3.attn_q_norm.weight"
//   GgufToHfTensorName("qwen2", "blk.0.attn_q.bias")                      -> "model.layers.0.self_attn.q_proj.bias"
//   GgufToHfTensorName("qwen35", "blk.0.ssm_a")  -> "model.language_model.layers.0.linear_attn.A_log"
//
// Names with no GGUF counterpart (e.g. "model.rotary_emb.inv_freq") or not used by the
// architecture (q_norm in qwen2) are NotFound, so a converter can decide to skip or fail.
// Dense archs need no data transformation (GGUF ne is the reverse of the PyTorch shape,
// same bytes; NeoX RoPE, no q/k permutation). The MoE and hybrid archs' names are one-to-one
// only for tensors the converter does not split, fuse or stack (experts, Qwen3-Next
// in_proj_qkvz); their data transformations (norms + 1, -exp(A_log), value-head order)
// live in model/gguf_hybrid_plan.h. Qwen3.5's HF names carry the "model.language_model."
// prefix (accepted on input with or without "language_model.").
// The multi-token-prediction head (HF mtp.*) is llama.cpp's NextN block: one extra block at
// index num_hidden_layers whose layer tensors take the usual names (mtp.layers.0.self_attn.q_proj
// -> blk.N.attn_q, GgufLayerSuffix) and whose own tensors are blk.N.nextn.* (GgufNextnSuffix).
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace pagellm {

// `arch` is the GGUF architecture: qwen2, qwen3, qwen3moe, qwen3next, qwen35 or qwen35moe.
StatusOr<std::string> HfToGgufTensorName(std::string_view arch, std::string_view hf_name);
StatusOr<std::string> GgufToHfTensorName(std::string_view arch, std::string_view gguf_name);

// True for qwen3next, qwen35, qwen35moe.
bool IsHybridGgufArch(std::string_view arch);

// True for the archs whose tensors are made by model/gguf_hybrid_plan.h's plans (experts
// stacked into ffn_*_exps, hybrid transformations): qwen3moe and the hybrid ones.
bool UsesGgufTensorPlans(std::string_view arch);

// The suffix llama.cpp names tensor `field` (the HF name below "layers.N.") of `arch` by,
// e.g. ("qwen35", "linear_attn.A_log") -> "ssm_a"; NotFound for fields it has no 1:1 name for.
StatusOr<std::string> GgufLayerSuffix(std::string_view arch, std::string_view field);

// The suffix below "blk.N." of the MTP head's own tensors (`field` is the name below "mtp."),
// as llama.cpp's _QwenMtpMixin renames them: "fc.weight" -> "nextn.eh_proj.weight",
// "pre_fc_norm_embedding.weight" -> "nextn.enorm.weight", "pre_fc_norm_hidden.weight" ->
// "nextn.hnorm.weight", "norm.weight" -> "nextn.shared_head_norm.weight"; NotFound otherwise.
StatusOr<std::string> GgufNextnSuffix(std::string_view field);

}  // namespace pagellm
