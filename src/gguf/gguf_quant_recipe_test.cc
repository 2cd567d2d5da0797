// llama-quantize's recipe rules, each on a small synthetic model. The whole recipe is checked
// against llama.cpp itself on converted dummy models by gguf_quantized_matches_llama_quantize_*
// (tests/gguf/compare_quantized_files.py).
#include "gguf/gguf_quant_recipe.h"

#include <map>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace pagellm {
namespace {

// A qwen3-shaped tensor list in the converter's order: [rows, cols] given as ggml ne.
std::vector<GgufRecipeTensor> DenseModel(int num_layers, int64_t h, int64_t ff, bool tied) {
  std::vector<GgufRecipeTensor> t = {{"token_embd.weight", {h, 1000}, GgmlType::kF16}};
  for (int i = 0; i < num_layers; ++i) {
    const std::string p = fmt::format("blk.{}.", i);
    for (const char* name : {"attn_q", "attn_k", "attn_v", "attn_output"}) t.push_back({p + name + ".weight", {h, h}, GgmlType::kF16});
    t.push_back({p + "ffn_gate.weight", {h, ff}, GgmlType::kF16});
    t.push_back({p + "ffn_up.weight", {h, ff}, GgmlType::kF16});
    t.push_back({p + "ffn_down.weight", {ff, h}, GgmlType::kF16});
    t.push_back({p + "attn_norm.weight", {h}, GgmlType::kF32});
    t.push_back({p + "attn_q_norm.weight", {64}, GgmlType::kF32});
  }
  t.push_back({"output_norm.weight", {h}, GgmlType::kF32});
  if (!tied) t.push_back({"output.weight", {h, 1000}, GgmlType::kF16});
  return t;
}

std::map<std::string, GgmlType> TypesByName(GgufFileType f, const GgufRecipeModel& m,
                                            const std::vector<GgufRecipeTensor>& tensors) {
  StatusOr<std::vector<GgmlType>> types = GgufRecipeTypes(f, m, tensors);
  EXPECT_TRUE(types.ok()) << types.status();
  std::map<std::string, GgmlType> out;
  for (size_t i = 0; types.ok() && i < tensors.size(); ++i) out[tensors[i].name] = (*types)[i];
  return out;
}

TEST(GgufQuantRecipeTest, Q4_K_MUsesMoreBitsOnSomeLayers) {
  const GgufRecipeModel model{.num_layers = 8, .num_heads = 4, .num_kv_heads = 2};
  auto types = TypesByName(GgufFileType::kQ4_K_M, model, DenseModel(8, 256, 512, /*tied=*/false));
  // use_more_bits(i, 8): i < 1, i >= 7 or (i - 1) % 3 == 2 -> layers 0, 3, 6, 7.
  for (int i = 0; i < 8; ++i) {
    const GgmlType more = (i == 0 || i == 3 || i == 6 || i == 7) ? GgmlType::kQ6_K : GgmlType::kQ4_K;
    EXPECT_EQ(types[fmt::format("blk.{}.attn_v.weight", i)], more) << i;
    EXPECT_EQ(types[fmt::format("blk.{}.ffn_down.weight", i)], more) << i;
    EXPECT_EQ(types[fmt::format("blk.{}.attn_q.weight", i)], GgmlType::kQ4_K);
    EXPECT_EQ(types[fmt::format("blk.{}.attn_k.weight", i)], GgmlType::kQ4_K);
    EXPECT_EQ(types[fmt::format("blk.{}.ffn_up.weight", i)], GgmlType::kQ4_K);
    EXPECT_EQ(types[fmt::format("blk.{}.attn_norm.weight", i)], GgmlType::kF32);
  }
  EXPECT_EQ(types["output.weight"], GgmlType::kQ6_K);
  EXPECT_EQ(types["token_embd.weight"], GgmlType::kQ4_K);  // untied: the default type
  EXPECT_EQ(types["output_norm.weight"], GgmlType::kF32);
}

TEST(GgufQuantRecipeTest, TiedEmbeddingsTakeTheOutputRule) {
  const GgufRecipeModel model{.num_layers = 2, .num_heads = 4, .num_kv_heads = 2};
  EXPECT_EQ(TypesByName(GgufFileType::kQ4_K_M, model, DenseModel(2, 256, 512, true))["token_embd.weight"],
            GgmlType::kQ6_K);
  EXPECT_EQ(TypesByName(GgufFileType::kQ4_0, model, DenseModel(2, 256, 512, true))["token_embd.weight"],
            GgmlType::kQ6_K);
  EXPECT_EQ(TypesByName(GgufFileType::kQ8_0, model, DenseModel(2, 256, 512, true))["token_embd.weight"],
            GgmlType::kQ8_0);
  // Rows of 64: not a multiple of Q4_K's 256 -> Q8_0 directly; of Q4_0's 32 they are, but
  // the chosen Q6_K then falls back to Q8_0.
  EXPECT_EQ(TypesByName(GgufFileType::kQ4_K_M, model, DenseModel(2, 64, 128, true))["token_embd.weight"],
            GgmlType::kQ8_0);
  EXPECT_EQ(TypesByName(GgufFileType::kQ4_0, model, DenseModel(2, 64, 128, true))["token_embd.weight"],
            GgmlType::kQ8_0);
}

TEST(GgufQuantRecipeTest, NarrowRowsFallBack) {
  const GgufRecipeModel model{.num_layers = 8, .num_heads = 4, .num_kv_heads = 2};
  auto q4 = TypesByName(GgufFileType::kQ4_K_M, model, DenseModel(8, 64, 96, false));
  EXPECT_EQ(q4["blk.1.attn_q.weight"], GgmlType::kQ5_0);     // Q4_K -> Q5_0
  EXPECT_EQ(q4["blk.0.attn_v.weight"], GgmlType::kQ8_0);     // Q6_K -> Q8_0
  EXPECT_EQ(q4["blk.1.ffn_down.weight"], GgmlType::kQ5_0);   // rows of 96: 96 % 32 == 0
  EXPECT_EQ(q4["blk.0.ffn_down.weight"], GgmlType::kQ8_0);   // a more-bits layer: Q6_K -> Q8_0
  auto q5 = TypesByName(GgufFileType::kQ5_K_M, model, DenseModel(8, 64, 96, false));
  EXPECT_EQ(q5["blk.1.attn_q.weight"], GgmlType::kQ5_1);  // Q5_K -> Q5_1
  auto xs = TypesByName(GgufFileType::kIQ4_XS, model, DenseModel(8, 64, 96, false));
  EXPECT_EQ(xs["blk.1.attn_q.weight"], GgmlType::kIQ4_NL);  // IQ4_XS -> IQ4_NL
  auto odd = TypesByName(GgufFileType::kQ4_0, model, DenseModel(8, 48, 96, false));
  EXPECT_EQ(odd["blk.1.attn_q.weight"], GgmlType::kF16);  // 48 % 32 != 0
}

TEST(GgufQuantRecipeTest, LayerCountersFollowLlamaOrderNotFileOrder) {
  // 12 layers: llama-quantize visits blk.2 before blk.10 (numeric, not string order), so the
  // attn_v counter equals the layer even when the file lists layers out of order.
  const GgufRecipeModel model{.num_layers = 12, .num_heads = 4, .num_kv_heads = 2};
  std::vector<GgufRecipeTensor> t = DenseModel(12, 256, 512, false);
  std::reverse(t.begin(), t.end());
  auto types = TypesByName(GgufFileType::kQ5_K_M, model, t);
  // use_more_bits(i, 12): i < 1, i >= 10, (i - 1) % 3 == 2 -> 0, 3, 6, 9, 10, 11.
  for (int i = 0; i < 12; ++i) {
    const bool more = i == 0 || i == 3 || i == 6 || i == 9 || i == 10 || i == 11;
    EXPECT_EQ(types[fmt::format("blk.{}.attn_v.weight", i)], more ? GgmlType::kQ6_K : GgmlType::kQ5_K) << i;
  }
  std::vector<size_t> order = GgufLlamaTensorOrder({"blk.10.a", "output.weight", "blk.2.b", "blk.2.a", "token_embd.weight"});
  EXPECT_EQ(order, (std::vector<size_t>{1, 4, 3, 2, 0}));
}

TEST(GgufQuantRecipeTest, Iq4RulesAndGqa) {
  GgufRecipeModel model{.num_layers = 16, .num_heads = 8, .num_kv_heads = 2};  // gqa 4
  auto types = TypesByName(GgufFileType::kIQ4_XS, model, DenseModel(16, 256, 512, false));
  EXPECT_EQ(types["blk.5.attn_v.weight"], GgmlType::kQ5_K);
  EXPECT_EQ(types["blk.0.ffn_down.weight"], GgmlType::kQ5_K);  // i < 16 / 8
  EXPECT_EQ(types["blk.1.ffn_down.weight"], GgmlType::kQ5_K);
  EXPECT_EQ(types["blk.2.ffn_down.weight"], GgmlType::kIQ4_XS);
  EXPECT_EQ(types["output.weight"], GgmlType::kQ6_K);
  model.num_kv_heads = 4;  // gqa 2
  EXPECT_EQ(TypesByName(GgufFileType::kIQ4_XS, model, DenseModel(16, 256, 512, false))["blk.5.attn_v.weight"],
            GgmlType::kIQ4_XS);
}

TEST(GgufQuantRecipeTest, EightExpertMoe) {
  const GgufRecipeModel model{.num_layers = 4, .num_heads = 4, .num_kv_heads = 2, .num_experts = 8};
  std::vector<GgufRecipeTensor> t = {{"token_embd.weight", {256, 1000}, GgmlType::kF16},
                                     {"output.weight", {256, 1000}, GgmlType::kF16}};
  for (int i = 0; i < 4; ++i) {
    const std::string p = fmt::format("blk.{}.", i);
    t.push_back({p + "attn_v.weight", {256, 256}, GgmlType::kF16});
    t.push_back({p + "attn_k.weight", {256, 256}, GgmlType::kF16});
    t.push_back({p + "attn_output.weight", {256, 256}, GgmlType::kF16});
    t.push_back({p + "ffn_gate_inp.weight", {256, 8}, GgmlType::kF32});
    t.push_back({p + "ffn_down_exps.weight", {256, 256, 8}, GgmlType::kF16});
    t.push_back({p + "ffn_down_shexp.weight", {256, 256}, GgmlType::kF16});
    t.push_back({p + "ffn_gate_inp_shexp.weight", {256, 1}, GgmlType::kF32});
  }
  auto types = TypesByName(GgufFileType::kQ4_K_M, model, t);
  EXPECT_EQ(types["blk.1.attn_v.weight"], GgmlType::kQ8_0);
  EXPECT_EQ(types["blk.1.attn_k.weight"], GgmlType::kQ8_0);
  EXPECT_EQ(types["blk.1.attn_output.weight"], GgmlType::kQ5_K);
  EXPECT_EQ(types["blk.1.ffn_gate_inp.weight"], GgmlType::kF32);
  EXPECT_EQ(types["blk.1.ffn_gate_inp_shexp.weight"], GgmlType::kF32);  // 1-D in ggml terms
  // MoE: ffn_down's layer comes from the name, so _exps and _shexp of a layer agree
  // (use_more_bits(i, 4): layers 2 and 3); a running count would give layer 2's pair 4 and 5.
  for (int i = 0; i < 4; ++i) {
    const GgmlType expected = i >= 2 ? GgmlType::kQ6_K : GgmlType::kQ4_K;
    EXPECT_EQ(types[fmt::format("blk.{}.ffn_down_exps.weight", i)], expected) << i;
    EXPECT_EQ(types[fmt::format("blk.{}.ffn_down_shexp.weight", i)], expected) << i;
  }
  EXPECT_EQ(TypesByName(GgufFileType::kQ5_K_M, model, t)["blk.1.attn_output.weight"], GgmlType::kQ5_K);
  EXPECT_EQ(TypesByName(GgufFileType::kQ6_K, model, t)["blk.1.attn_output.weight"], GgmlType::kQ6_K);
  t.push_back({"blk.x.ffn_down_exps.weight", {256, 256, 8}, GgmlType::kF16});
  EXPECT_FALSE(GgufRecipeTypes(GgufFileType::kQ4_K_M, model, t).ok());
}

TEST(GgufQuantRecipeTest, HybridQkvCountsAsAttnVAndConvStaysF32) {
  const GgufRecipeModel model{.num_layers = 8, .num_heads = 4, .num_kv_heads = 2};
  std::vector<GgufRecipeTensor> t;
  for (int i = 0; i < 8; ++i) {
    const std::string p = fmt::format("blk.{}.", i);
    t.push_back({p + (i % 4 == 3 ? "attn_v.weight" : "attn_qkv.weight"), {256, 512}, GgmlType::kF16});
    t.push_back({p + "ssm_conv1d.weight", {4, 512}, GgmlType::kF32});
  }
  auto types = TypesByName(GgufFileType::kQ4_K_M, model, t);
  EXPECT_EQ(types["blk.0.attn_qkv.weight"], GgmlType::kQ6_K);
  EXPECT_EQ(types["blk.1.attn_qkv.weight"], GgmlType::kQ4_K);
  EXPECT_EQ(types["blk.3.attn_v.weight"], GgmlType::kQ6_K);
  EXPECT_EQ(types["blk.1.ssm_conv1d.weight"], GgmlType::kF32);
}

TEST(GgufQuantRecipeTest, RefusesToRequantize) {
  const GgufRecipeModel model{.num_layers = 2, .num_heads = 4, .num_kv_heads = 2};
  std::vector<GgufRecipeTensor> t = DenseModel(2, 256, 512, false);
  t[1].type = GgmlType::kQ8_0;
  EXPECT_FALSE(GgufRecipeTypes(GgufFileType::kQ4_K_M, model, t).ok());
  EXPECT_TRUE(GgufRecipeTypes(GgufFileType::kQ8_0, model, t).ok());  // unchanged type: copied
}

TEST(GgufQuantRecipeTest, MetadataModelAndNames) {
  GgufMetadata kv = {{"general.architecture", GgufValue::String("qwen3")},
                     {"general.file_type", GgufValue::U32(1)},
                     {"qwen3.block_count", GgufValue::U32(28)},
                     {"general.quantization_version", GgufValue::U32(2)},
                     {"qwen3.attention.head_count", GgufValue::U32(16)},
                     {"qwen3.attention.head_count_kv", GgufValue::I32Array({8, 8})},
                     {"tokenizer.ggml.model", GgufValue::String("gpt2")}};
  StatusOr<GgufRecipeModel> model = GgufRecipeModelFromMetadata(kv);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->num_layers, 28);
  EXPECT_EQ(model->num_heads, 16);
  EXPECT_EQ(model->num_kv_heads, 8);
  EXPECT_EQ(model->num_experts, 0);
  GgufMetadata out = GgufQuantizedMetadata(kv, GgufFileType::kQ4_K_M);
  ASSERT_EQ(out.size(), kv.size());
  EXPECT_EQ(out[0].first, "general.architecture");
  EXPECT_EQ(out[4].first, "tokenizer.ggml.model");
  EXPECT_EQ(out[5].first, "general.quantization_version");
  EXPECT_EQ(out[6].first, "general.file_type");
  EXPECT_EQ(out[6].second, GgufValue::U32(15));
  EXPECT_EQ(GgufFileTypeFromName("Q4_K_M").value(), GgufFileType::kQ4_K_M);
  EXPECT_EQ(GgufFileTypeName(GgufFileType::kIQ4_XS), "iq4_xs");
  EXPECT_FALSE(GgufFileTypeFromName("q4_k").ok());
  EXPECT_EQ(GgmlTrimmedDims({64, 1}), (std::vector<int64_t>{64}));
  EXPECT_EQ(GgmlTrimmedDims({64, 1, 3}), (std::vector<int64_t>{64, 1, 3}));
  EXPECT_EQ(GgmlTrimmedDims({1, 1}), (std::vector<int64_t>{1}));
}

}  // namespace
}  // namespace pagellm
