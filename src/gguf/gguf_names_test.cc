#include "gguf/gguf_names.h"

#include <gtest/gtest.h>

namespace pagellm {
namespace {

TEST(GgufNamesTest, MapsEveryDenseQwenTensorBothWays) {
  // Pairs from llama.cpp's tensor map (docs/qwen-architectures.md section 5.1).
  const std::pair<const char*, const char*> pairs[] = {
      {"model.embed_tokens.weight", "token_embd.weight"},
      {"model.norm.weight", "output_norm.weight"},
      {"lm_head.weight", "output.weight"},
      {"model.layers.0.input_layernorm.weight", "blk.0.attn_norm.weight"},
      {"model.layers.12.post_attention_layernorm.weight", "blk.12.ffn_norm.weight"},
      {"model.layers.3.self_attn.q_proj.weight", "blk.3.attn_q.weight"},
      {"model.layers.3.self_attn.k_proj.bias", "blk.3.attn_k.bias"},
      {"model.layers.3.self_attn.v_proj.weight", "blk.3.attn_v.weight"},
      {"model.layers.27.self_attn.o_proj.weight", "blk.27.attn_output.weight"},
      {"model.layers.5.self_attn.q_norm.weight", "blk.5.attn_q_norm.weight"},
      {"model.layers.5.self_attn.k_norm.weight", "blk.5.attn_k_norm.weight"},
      {"model.layers.1.mlp.gate_proj.weight", "blk.1.ffn_gate.weight"},
      {"model.layers.1.mlp.up_proj.weight", "blk.1.ffn_up.weight"},
      {"model.layers.1.mlp.down_proj.weight", "blk.1.ffn_down.weight"},
  };
  for (const auto& [hf, gguf] : pairs) {
    StatusOr<std::string> g = HfToGgufTensorName("qwen3", hf);
    ASSERT_TRUE(g.ok()) << hf << ": " << g.status();
    EXPECT_EQ(*g, gguf);
    StatusOr<std::string> h = GgufToHfTensorName("qwen3", gguf);
    ASSERT_TRUE(h.ok()) << gguf << ": " << h.status();
    EXPECT_EQ(*h, hf);
  }
}

TEST(GgufNamesTest, RejectsUnknownAndArchSpecificNames) {
  EXPECT_EQ(HfToGgufTensorName("qwen3", "model.rotary_emb.inv_freq").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(HfToGgufTensorName("qwen2", "model.layers.0.self_attn.q_norm.weight").status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(*HfToGgufTensorName("qwen2", "model.layers.0.self_attn.q_proj.bias"), "blk.0.attn_q.bias");
  EXPECT_FALSE(HfToGgufTensorName("qwen3", "model.layers.x.mlp.up_proj.weight").ok());
  EXPECT_FALSE(HfToGgufTensorName("qwen3", "model.layers.-1.mlp.up_proj.weight").ok());
  EXPECT_FALSE(GgufToHfTensorName("qwen3", "blk.0.nonsense.weight").ok());
  EXPECT_EQ(HfToGgufTensorName("llama", "lm_head.weight").status().code(), StatusCode::kUnimplemented);
}

TEST(GgufNamesTest, MapsHybridQwenTensorsBothWays) {
  // llama.cpp gguf-py constants for QWEN35 / QWEN35MOE / QWEN3NEXT; Qwen3.5's HF names
  // carry the multimodal wrapper's "model.language_model." prefix.
  const std::pair<const char*, const char*> pairs[] = {
      {"model.language_model.embed_tokens.weight", "token_embd.weight"},
      {"model.language_model.norm.weight", "output_norm.weight"},
      {"lm_head.weight", "output.weight"},
      {"model.language_model.layers.2.post_attention_layernorm.weight", "blk.2.post_attention_norm.weight"},
      {"model.language_model.layers.0.linear_attn.in_proj_qkv.weight", "blk.0.attn_qkv.weight"},
      {"model.language_model.layers.0.linear_attn.in_proj_z.weight", "blk.0.attn_gate.weight"},
      {"model.language_model.layers.0.linear_attn.in_proj_b.weight", "blk.0.ssm_beta.weight"},
      {"model.language_model.layers.0.linear_attn.in_proj_a.weight", "blk.0.ssm_alpha.weight"},
      {"model.language_model.layers.0.linear_attn.conv1d.weight", "blk.0.ssm_conv1d.weight"},
      {"model.language_model.layers.0.linear_attn.dt_bias", "blk.0.ssm_dt.bias"},
      {"model.language_model.layers.0.linear_attn.A_log", "blk.0.ssm_a"},
      {"model.language_model.layers.0.linear_attn.norm.weight", "blk.0.ssm_norm.weight"},
      {"model.language_model.layers.0.linear_attn.out_proj.weight", "blk.0.ssm_out.weight"},
      {"model.language_model.layers.3.self_attn.q_norm.weight", "blk.3.attn_q_norm.weight"},
      {"model.language_model.layers.1.mlp.gate.weight", "blk.1.ffn_gate_inp.weight"},
      {"model.language_model.layers.1.mlp.shared_expert.up_proj.weight", "blk.1.ffn_up_shexp.weight"},
      {"model.language_model.layers.1.mlp.shared_expert_gate.weight", "blk.1.ffn_gate_inp_shexp.weight"},
  };
  for (const auto& [hf, gguf] : pairs) {
    EXPECT_EQ(HfToGgufTensorName("qwen35moe", hf).value(), gguf) << hf;
    EXPECT_EQ(GgufToHfTensorName("qwen35moe", gguf).value(), hf) << gguf;
  }
  EXPECT_EQ(*HfToGgufTensorName("qwen35", "model.layers.0.linear_attn.A_log"), "blk.0.ssm_a");  // text-only export
  EXPECT_EQ(*GgufToHfTensorName("qwen3next", "blk.0.ssm_ba.weight"), "model.layers.0.linear_attn.in_proj_ba.weight");
  EXPECT_EQ(*GgufToHfTensorName("qwen3next", "blk.1.ffn_gate_inp.weight"), "model.layers.1.mlp.gate.weight");
  EXPECT_EQ(HfToGgufTensorName("qwen3", "model.layers.0.linear_attn.A_log").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(HfToGgufTensorName("qwen35", "model.layers.0.self_attn.q_proj.bias").status().code(),
            StatusCode::kNotFound);
  EXPECT_TRUE(IsHybridGgufArch("qwen35moe"));
  EXPECT_FALSE(IsHybridGgufArch("qwen3"));
  EXPECT_FALSE(IsHybridGgufArch("qwen3moe"));
  EXPECT_TRUE(UsesGgufTensorPlans("qwen3moe"));
  EXPECT_FALSE(UsesGgufTensorPlans("qwen3"));
}

// llama.cpp's qwen3moe: dense names for attention and norms (ffn_norm, not
// post_attention_norm), the router as ffn_gate_inp; experts are stacked by the plans.
TEST(GgufNamesTest, Qwen3MoeNames) {
  const std::pair<std::string, std::string> pairs[] = {
      {"model.layers.2.input_layernorm.weight", "blk.2.attn_norm.weight"},
      {"model.layers.2.post_attention_layernorm.weight", "blk.2.ffn_norm.weight"},
      {"model.layers.2.self_attn.q_norm.weight", "blk.2.attn_q_norm.weight"},
      {"model.layers.2.self_attn.o_proj.weight", "blk.2.attn_output.weight"},
      {"model.layers.2.mlp.gate.weight", "blk.2.ffn_gate_inp.weight"},
      {"model.norm.weight", "output_norm.weight"},
  };
  for (const auto& [hf, gguf] : pairs) {
    EXPECT_EQ(HfToGgufTensorName("qwen3moe", hf).value(), gguf) << hf;
    EXPECT_EQ(GgufToHfTensorName("qwen3moe", gguf).value(), hf) << gguf;
  }
  EXPECT_EQ(HfToGgufTensorName("qwen3moe", "model.layers.0.mlp.gate_proj.weight").status().code(),
            StatusCode::kNotFound);  // no dense layers in qwen3moe
  EXPECT_EQ(GgufLayerSuffix("qwen3moe", "post_attention_layernorm.weight").value(), "ffn_norm.weight");
  EXPECT_EQ(GgufLayerSuffix("qwen35", "post_attention_layernorm.weight").value(), "post_attention_norm.weight");
}

}  // namespace
}  // namespace pagellm
