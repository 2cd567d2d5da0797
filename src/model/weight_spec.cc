#include "model/weight_spec.h"

#include <map>

#include <fmt/format.h>

namespace pagellm {
namespace {

class LayerSpecs {
 public:
  // `prefix`: the model's weight_prefix, or "mtp." for the MTP layers.
  LayerSpecs(const ModelConfig& c, int64_t layer_idx, std::vector<WeightSpec>& specs, bool mtp = false)
      : c_(c), l_(layer_idx), specs_(specs), mtp_(mtp) {}

  void Add(const std::string& field, std::vector<int64_t> shape, WeightRole role, int64_t expert_idx = -1) {
    specs_.push_back({fmt::format("{}layers.{}.{}", mtp_ ? "mtp." : c_.weight_prefix, l_, field), std::move(shape),
                      role, l_, expert_idx, field, mtp_});
  }

  void Attention() {
    const int64_t H = c_.hidden_size, q = c_.q_size(), kv = c_.kv_size();
    Add("self_attn.q_proj.weight", {c_.gated_attention ? 2 * q : q, H}, WeightRole::kQProj);
    Add("self_attn.k_proj.weight", {kv, H}, WeightRole::kKProj);
    Add("self_attn.v_proj.weight", {kv, H}, WeightRole::kVProj);
    if (c_.qkv_bias) {
      Add("self_attn.q_proj.bias", {q}, WeightRole::kQkvBias);
      Add("self_attn.k_proj.bias", {kv}, WeightRole::kQkvBias);
      Add("self_attn.v_proj.bias", {kv}, WeightRole::kQkvBias);
    }
    Add("self_attn.o_proj.weight", {H, q}, WeightRole::kOProj);
    if (c_.o_bias) Add("self_attn.o_proj.bias", {H}, WeightRole::kOBias);
    if (c_.qk_norm) {
      Add("self_attn.q_norm.weight", {c_.head_dim}, WeightRole::kQkNorm);
      Add("self_attn.k_norm.weight", {c_.head_dim}, WeightRole::kQkNorm);
    }
  }

  void LinearAttention() {
    const int64_t H = c_.hidden_size, nv = c_.linear_num_value_heads, vd = c_.linear_value_dim();
    const int64_t conv = c_.linear_conv_dim();
    if (c_.grouped_gdn_projections) {
      Add("linear_attn.in_proj_qkvz.weight", {conv + vd, H}, WeightRole::kGdnInProj);
      Add("linear_attn.in_proj_ba.weight", {2 * nv, H}, WeightRole::kGdnGateProj);
    } else {
      Add("linear_attn.in_proj_qkv.weight", {conv, H}, WeightRole::kGdnInProj);
      Add("linear_attn.in_proj_z.weight", {vd, H}, WeightRole::kGdnInProj);
      Add("linear_attn.in_proj_b.weight", {nv, H}, WeightRole::kGdnGateProj);
      Add("linear_attn.in_proj_a.weight", {nv, H}, WeightRole::kGdnGateProj);
    }
    Add("linear_attn.conv1d.weight", {conv, 1, c_.linear_conv_kernel_dim}, WeightRole::kGdnConv);
    Add("linear_attn.dt_bias", {nv}, WeightRole::kGdnDtBias);
    Add("linear_attn.A_log", {nv}, WeightRole::kGdnALog);
    Add("linear_attn.norm.weight", {c_.linear_value_head_dim}, WeightRole::kGdnNorm);
    Add("linear_attn.out_proj.weight", {H, vd}, WeightRole::kGdnOutProj);
  }

  void Mlp() {
    const int64_t H = c_.hidden_size, I = c_.intermediate_size;
    Add("mlp.gate_proj.weight", {I, H}, WeightRole::kGateUp);
    Add("mlp.up_proj.weight", {I, H}, WeightRole::kGateUp);
    Add("mlp.down_proj.weight", {H, I}, WeightRole::kDown);
  }

  void Moe() {
    const int64_t H = c_.hidden_size, E = c_.num_experts, Ie = c_.moe_intermediate_size;
    Add("mlp.gate.weight", {E, H}, WeightRole::kRouter);
    if (c_.fused_experts) {
      Add("mlp.experts.gate_up_proj", {E, 2 * Ie, H}, WeightRole::kExpertGateUp);
      Add("mlp.experts.down_proj", {E, H, Ie}, WeightRole::kExpertDown);
    } else {
      for (int64_t e = 0; e < E; ++e) {
        Add(fmt::format("mlp.experts.{}.gate_proj.weight", e), {Ie, H}, WeightRole::kExpertGateUp, e);
        Add(fmt::format("mlp.experts.{}.up_proj.weight", e), {Ie, H}, WeightRole::kExpertGateUp, e);
        Add(fmt::format("mlp.experts.{}.down_proj.weight", e), {H, Ie}, WeightRole::kExpertDown, e);
      }
    }
    if (c_.shared_expert_intermediate_size > 0) {
      const int64_t Is = c_.shared_expert_intermediate_size;
      Add("mlp.shared_expert.gate_proj.weight", {Is, H}, WeightRole::kSharedGateUp);
      Add("mlp.shared_expert.up_proj.weight", {Is, H}, WeightRole::kSharedGateUp);
      Add("mlp.shared_expert.down_proj.weight", {H, Is}, WeightRole::kSharedDown);
      Add("mlp.shared_expert_gate.weight", {1, H}, WeightRole::kSharedExpertGate);
    }
  }

 private:
  const ModelConfig& c_;
  int64_t l_;
  std::vector<WeightSpec>& specs_;
  bool mtp_;
};

void AppendLayer(const ModelConfig& c, int64_t l, std::vector<WeightSpec>& specs) {
  LayerSpecs layer(c, l, specs);
  layer.Add("input_layernorm.weight", {c.hidden_size}, WeightRole::kLayerNorm);
  if (c.IsFullAttentionLayer(l)) {
    layer.Attention();
  } else {
    layer.LinearAttention();
  }
  layer.Add("post_attention_layernorm.weight", {c.hidden_size}, WeightRole::kLayerNorm);
  if (c.IsMoeLayer(l)) {
    layer.Moe();
  } else {
    layer.Mlp();
  }
}

}  // namespace

Status CheckLayerCount(const ModelConfig& config, size_t num_tensors) {
  if (config.num_hidden_layers <= static_cast<int64_t>(num_tensors)) return OkStatus();
  return InvalidArgumentError(fmt::format(
      "the config has {} decoder layers (num_hidden_layers, block_count in a GGUF) but the checkpoint holds only {} "
      "tensors",
      config.num_hidden_layers, num_tensors));
}

std::vector<WeightSpec> ListWeightSpecs(const ModelConfig& c) {
  std::vector<WeightSpec> specs;
  specs.push_back({c.weight_prefix + "embed_tokens.weight", {c.vocab_size, c.hidden_size}, WeightRole::kEmbedding, -1, -1, ""});
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) AppendLayer(c, l, specs);
  specs.push_back({c.weight_prefix + "norm.weight", {c.hidden_size}, WeightRole::kFinalNorm, -1, -1, ""});
  if (!c.tie_word_embeddings) {
    specs.push_back({"lm_head.weight", {c.vocab_size, c.hidden_size}, WeightRole::kLmHead, -1, -1, ""});
  }
  return specs;
}

std::vector<WeightSpec> ListMtpWeightSpecs(const ModelConfig& c) {
  std::vector<WeightSpec> specs;
  if (c.mtp_num_hidden_layers <= 0) return specs;
  const int64_t H = c.hidden_size;
  auto add = [&](const char* name, std::vector<int64_t> shape, WeightRole role) {
    specs.push_back({name, std::move(shape), role, -1, -1, name + 4, true});  // field: name without "mtp."
  };
  add("mtp.fc.weight", {H, 2 * H}, WeightRole::kMtpFc);
  add("mtp.pre_fc_norm_embedding.weight", {H}, WeightRole::kMtpNorm);
  add("mtp.pre_fc_norm_hidden.weight", {H}, WeightRole::kMtpNorm);
  for (int64_t l = 0; l < c.mtp_num_hidden_layers; ++l) {
    // A full-attention layer; its FFN is MoE in the MoE models (vLLM's Qwen3NextDecoderLayer
    // at index num_hidden_layers + l).
    LayerSpecs layer(c, l, specs, /*mtp=*/true);
    layer.Add("input_layernorm.weight", {H}, WeightRole::kLayerNorm);
    layer.Attention();
    layer.Add("post_attention_layernorm.weight", {H}, WeightRole::kLayerNorm);
    if (c.is_moe()) {
      layer.Moe();
    } else {
      layer.Mlp();
    }
  }
  add("mtp.norm.weight", {H}, WeightRole::kMtpNorm);
  return specs;
}

bool IsSkippedAuxiliaryTensor(const std::string& name) {
  for (const char* prefix : {"mtp.", "model.mtp.", "model.visual.", "visual.", "model.language_model.mtp."}) {
    if (name.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

TensorView* WeightSlot(ModelWeights& w, const WeightSpec& spec) {
  switch (spec.role) {
    case WeightRole::kEmbedding: return &w.embed_tokens;
    case WeightRole::kLmHead: return &w.lm_head;
    case WeightRole::kFinalNorm: return &w.norm;
    case WeightRole::kMtpFc: return &w.mtp.fc;
    case WeightRole::kMtpNorm:
      return spec.field == "pre_fc_norm_embedding.weight" ? &w.mtp.pre_fc_norm_embedding
             : spec.field == "pre_fc_norm_hidden.weight"  ? &w.mtp.pre_fc_norm_hidden
                                                          : &w.mtp.norm;
    default: break;
  }
  std::vector<LayerWeights>& layers = spec.mtp ? w.mtp.layers : w.layers;
  if (spec.mtp && layers.size() <= static_cast<size_t>(spec.layer_idx)) layers.resize(spec.layer_idx + 1);
  LayerWeights& l = layers[static_cast<size_t>(spec.layer_idx)];
  if (spec.expert_idx >= 0) {  // "mlp.experts.M.{gate,up,down}_proj.weight"
    const size_t e = static_cast<size_t>(spec.expert_idx);
    auto& list = spec.field.find(".gate_proj.") != std::string::npos ? l.expert_gate_proj
                 : spec.field.find(".up_proj.") != std::string::npos  ? l.expert_up_proj
                                                                       : l.expert_down_proj;
    if (list.size() <= e) list.resize(e + 1);
    return &list[e];
  }
  static const std::map<std::string, TensorView LayerWeights::*, std::less<>> kFields = {
      {"input_layernorm.weight", &LayerWeights::input_layernorm},
      {"self_attn.q_proj.weight", &LayerWeights::q_proj},
      {"self_attn.k_proj.weight", &LayerWeights::k_proj},
      {"self_attn.v_proj.weight", &LayerWeights::v_proj},
      {"self_attn.q_proj.bias", &LayerWeights::q_bias},
      {"self_attn.k_proj.bias", &LayerWeights::k_bias},
      {"self_attn.v_proj.bias", &LayerWeights::v_bias},
      {"self_attn.o_proj.weight", &LayerWeights::o_proj},
      {"self_attn.o_proj.bias", &LayerWeights::o_bias},
      {"self_attn.q_norm.weight", &LayerWeights::q_norm},
      {"self_attn.k_norm.weight", &LayerWeights::k_norm},
      {"post_attention_layernorm.weight", &LayerWeights::post_attention_layernorm},
      {"mlp.gate_proj.weight", &LayerWeights::gate_proj},
      {"mlp.up_proj.weight", &LayerWeights::up_proj},
      {"mlp.down_proj.weight", &LayerWeights::down_proj},
      {"linear_attn.in_proj_qkv.weight", &LayerWeights::gdn_in_proj_qkv},
      {"linear_attn.in_proj_z.weight", &LayerWeights::gdn_in_proj_z},
      {"linear_attn.in_proj_b.weight", &LayerWeights::gdn_in_proj_b},
      {"linear_attn.in_proj_a.weight", &LayerWeights::gdn_in_proj_a},
      {"linear_attn.in_proj_qkvz.weight", &LayerWeights::gdn_in_proj_qkvz},
      {"linear_attn.in_proj_ba.weight", &LayerWeights::gdn_in_proj_ba},
      {"linear_attn.conv1d.weight", &LayerWeights::gdn_conv1d},
      {"linear_attn.dt_bias", &LayerWeights::gdn_dt_bias},
      {"linear_attn.A_log", &LayerWeights::gdn_a_log},
      {"linear_attn.norm.weight", &LayerWeights::gdn_norm},
      {"linear_attn.out_proj.weight", &LayerWeights::gdn_out_proj},
      {"mlp.gate.weight", &LayerWeights::moe_router},
      {"mlp.experts.gate_up_proj", &LayerWeights::experts_gate_up},
      {"mlp.experts.down_proj", &LayerWeights::experts_down},
      {"mlp.shared_expert.gate_proj.weight", &LayerWeights::shared_gate_proj},
      {"mlp.shared_expert.up_proj.weight", &LayerWeights::shared_up_proj},
      {"mlp.shared_expert.down_proj.weight", &LayerWeights::shared_down_proj},
      {"mlp.shared_expert_gate.weight", &LayerWeights::shared_expert_gate},
  };
  auto it = kFields.find(spec.field);
  PAGELLM_CHECK(it != kFields.end());
  return &(l.*(it->second));
}

}  // namespace pagellm
