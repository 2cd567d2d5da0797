#include "model/weight_spec.h"

#include <fmt/format.h>

namespace pagellm {
namespace {

void AppendLayer(const ModelConfig& c, int64_t l, std::vector<WeightSpec>& specs) {
  const int64_t H = c.hidden_size, I = c.intermediate_size, q = c.q_size(), kv = c.kv_size();
  auto add = [&](const std::string& suffix, std::vector<int64_t> shape, WeightRole role) {
    specs.push_back({fmt::format("model.layers.{}.{}", l, suffix), std::move(shape), role, l});
  };
  add("input_layernorm.weight", {H}, WeightRole::kLayerNorm);
  add("self_attn.q_proj.weight", {q, H}, WeightRole::kQProj);
  add("self_attn.k_proj.weight", {kv, H}, WeightRole::kKProj);
  add("self_attn.v_proj.weight", {kv, H}, WeightRole::kVProj);
  if (c.qkv_bias) {
    add("self_attn.q_proj.bias", {q}, WeightRole::kQkvBias);
    add("self_attn.k_proj.bias", {kv}, WeightRole::kQkvBias);
    add("self_attn.v_proj.bias", {kv}, WeightRole::kQkvBias);
  }
  add("self_attn.o_proj.weight", {H, q}, WeightRole::kOProj);
  if (c.o_bias) add("self_attn.o_proj.bias", {H}, WeightRole::kOBias);
  if (c.qk_norm) {
    add("self_attn.q_norm.weight", {c.head_dim}, WeightRole::kQkNorm);
    add("self_attn.k_norm.weight", {c.head_dim}, WeightRole::kQkNorm);
  }
  add("post_attention_layernorm.weight", {H}, WeightRole::kLayerNorm);
  add("mlp.gate_proj.weight", {I, H}, WeightRole::kGateUp);
  add("mlp.up_proj.weight", {I, H}, WeightRole::kGateUp);
  add("mlp.down_proj.weight", {H, I}, WeightRole::kDown);
}

}  // namespace

std::vector<WeightSpec> ListWeightSpecs(const ModelConfig& c) {
  std::vector<WeightSpec> specs;
  specs.push_back({"model.embed_tokens.weight", {c.vocab_size, c.hidden_size}, WeightRole::kEmbedding});
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) AppendLayer(c, l, specs);
  specs.push_back({"model.norm.weight", {c.hidden_size}, WeightRole::kFinalNorm});
  if (!c.tie_word_embeddings) {
    specs.push_back({"lm_head.weight", {c.vocab_size, c.hidden_size}, WeightRole::kLmHead});
  }
  return specs;
}

}  // namespace pagellm
