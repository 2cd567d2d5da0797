// WeightSpec: the list of tensors a ModelConfig implies, with HF names and exact shapes.
//
//   for (const WeightSpec& spec : ListWeightSpecs(config)) ...
//   // "model.layers.0.self_attn.q_proj.weight" [nh*hd, H] role kQProj layer 0
//
// The single source of truth for names and shapes: weight binding checks checkpoints
// against it and the dummy generator creates exactly these tensors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"

namespace pagellm {

enum class WeightRole {
  kEmbedding,  // model.embed_tokens.weight  [V, H]
  kLmHead,     // lm_head.weight             [V, H] (absent when tied)
  kFinalNorm,  // model.norm.weight          [H]
  kLayerNorm,  // input_layernorm / post_attention_layernorm  [H]
  kQkNorm,     // self_attn.{q,k}_norm.weight  [hd]
  kQProj,      // [nh*hd, H]
  kKProj,      // [nkv*hd, H]
  kVProj,      // [nkv*hd, H]
  kOProj,      // [H, nh*hd]
  kQkvBias,    // [nh*hd] / [nkv*hd]
  kOBias,      // [H]
  kGateUp,     // mlp.{gate,up}_proj.weight  [I, H]
  kDown,       // mlp.down_proj.weight       [H, I]
};

struct WeightSpec {
  std::string name;
  std::vector<int64_t> shape;
  WeightRole role;
  int64_t layer_idx = -1;  // -1 for non-layer tensors
};

// Every tensor a checkpoint of `config` must contain, in module order (embedding,
// layers 0..L-1, final norm, lm_head).
std::vector<WeightSpec> ListWeightSpecs(const ModelConfig& config);

}  // namespace pagellm
