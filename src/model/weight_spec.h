// WeightSpec: the list of tensors a ModelConfig implies, with HF names and exact shapes.
//
//   for (const WeightSpec& spec : ListWeightSpecs(config)) ...
//   // "model.layers.0.self_attn.q_proj.weight" [nh*hd, H] role kQProj layer 0
//
// The single source of truth for names and shapes: weight binding checks checkpoints
// against it and the dummy generator creates exactly these tensors. Names follow
// docs/qwen-architectures.md §5.1: decoder tensors under config.weight_prefix ("model."
// or Qwen3.5's "model.language_model."), lm_head at the top level. Qwen3-MoE / Next
// experts are per-expert 2-D tensors, Qwen3.5-MoE experts two fused 3-D tensors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/config.h"
#include "model/weights.h"

namespace pagellm {

enum class WeightRole {
  kEmbedding,  // model.embed_tokens.weight  [V, H]
  kLmHead,     // lm_head.weight             [V, H] (absent when tied)
  kFinalNorm,  // model.norm.weight          [H]
  kLayerNorm,  // input_layernorm / post_attention_layernorm  [H]
  kQkNorm,     // self_attn.{q,k}_norm.weight  [hd]
  kQProj,      // [nh*hd, H]; gated attention [2*nh*hd, H]
  kKProj,      // [nkv*hd, H]
  kVProj,      // [nkv*hd, H]
  kOProj,      // [H, nh*hd]
  kQkvBias,    // [nh*hd] / [nkv*hd]
  kOBias,      // [H]
  kGateUp,     // mlp.{gate,up}_proj.weight  [I, H]
  kDown,       // mlp.down_proj.weight       [H, I]
  // Gated DeltaNet (linear_attn.*)
  kGdnInProj,    // in_proj_qkv [conv_dim, H], in_proj_z [nv*dv, H], in_proj_qkvz (Next)
  kGdnGateProj,  // in_proj_b / in_proj_a [nv, H], in_proj_ba [2*nv, H] (Next)
  kGdnConv,      // conv1d.weight [conv_dim, 1, K]
  kGdnDtBias,    // dt_bias [nv]
  kGdnALog,      // A_log [nv]
  kGdnNorm,      // norm.weight [dv]
  kGdnOutProj,   // out_proj.weight [H, nv*dv]
  // MoE (mlp.*)
  kRouter,            // mlp.gate.weight [E, H]
  kExpertGateUp,      // experts.M.{gate,up}_proj.weight [I_e, H] or experts.gate_up_proj [E, 2*I_e, H]
  kExpertDown,        // experts.M.down_proj.weight [H, I_e] or experts.down_proj [E, H, I_e]
  kSharedGateUp,      // shared_expert.{gate,up}_proj.weight [I_s, H]
  kSharedDown,        // shared_expert.down_proj.weight [H, I_s]
  kSharedExpertGate,  // shared_expert_gate.weight [1, H]
  // Multi-token prediction (mtp.*; its layers use the roles above with `mtp` set)
  kMtpFc,    // mtp.fc.weight [H, 2H]
  kMtpNorm,  // mtp.pre_fc_norm_{embedding,hidden}.weight, mtp.norm.weight [H]
};

struct WeightSpec {
  std::string name;
  std::vector<int64_t> shape;
  WeightRole role;
  int64_t layer_idx = -1;   // -1 for non-layer tensors
  int64_t expert_idx = -1;  // per-expert tensors only
  std::string field;        // name below "<prefix>layers.N." ("mlp.experts.3.up_proj.weight")
  bool mtp = false;         // an mtp.* tensor (layer_idx then counts MTP layers)
};

// Every tensor a checkpoint of `config` must contain, in module order (embedding,
// layers 0..L-1, final norm, lm_head).
std::vector<WeightSpec> ListWeightSpecs(const ModelConfig& config);

// OK when a checkpoint of `num_tensors` tensors can hold config's decoder layers (each has
// several); else an error naming both. The binders check it before anything is sized by the
// layer count: a corrupt block_count of 4294967295 used to end the process in a failed
// allocation instead of an error.
Status CheckLayerCount(const ModelConfig& config, size_t num_tensors);

// The multi-token-prediction tensors of `config` (mtp.fc, the two pre-fc norms,
// mtp.layers.N.* as a full-attention layer with the model's MLP or MoE, mtp.norm); empty
// when config.mtp_num_hidden_layers is 0. Bound only for MTP speculation.
std::vector<WeightSpec> ListMtpWeightSpecs(const ModelConfig& config);

// True for checkpoint tensors pagellm deliberately does not load: multi-token-prediction
// heads ("mtp.*") and the vision tower ("model.visual.*", "visual.*").
bool IsSkippedAuxiliaryTensor(const std::string& name);

// The ModelWeights field `spec` binds to (expert lists grow on demand); both the
// safetensors and the GGUF binder fill weights through it.
TensorView* WeightSlot(ModelWeights& w, const WeightSpec& spec);

}  // namespace pagellm
