#include "model/weight_binding.h"

#include <gtest/gtest.h>

#include <map>

#include "model/convert.h"
#include "model/weight_spec.h"
#include "tensor/half.h"

namespace pagellm {
namespace {

ModelConfig SmallConfig(const std::string& type, bool tied) {
  Json j = {{"model_type", type},       {"vocab_size", 50},        {"hidden_size", 16},
            {"intermediate_size", 24},  {"num_hidden_layers", 2},  {"num_attention_heads", 4},
            {"num_key_value_heads", 2}, {"tie_word_embeddings", tied}};
  if (type == "qwen3") j["head_dim"] = 8;
  return ParseModelConfig(j).value();
}

// A store with every expected tensor; element i of each tensor holds (i % 128) * 0.5 (exact in bf16).
std::unique_ptr<TensorStore> FullStore(const ModelConfig& config, DType dtype) {
  auto store = std::make_unique<TensorStore>();
  for (const WeightSpec& spec : ListWeightSpecs(config)) {
    TensorView& v = store->Allocate(spec.name, dtype, spec.shape);
    TensorView f32{nullptr, DType::kF32, spec.shape};
    std::vector<float> values(static_cast<size_t>(v.numel()));
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 128) * 0.5f;
    f32.data = values.data();
    ConvertTensor(f32, v);
  }
  return store;
}

TEST(WeightSpecTest, Qwen2AndQwen3TensorLists) {
  auto qwen2 = ListWeightSpecs(SmallConfig("qwen2", true));
  EXPECT_EQ(qwen2.size(), 1u + 2 * 12 + 1);  // embed, 12 per layer (3 biases), norm; tied: no lm_head
  EXPECT_EQ(qwen2[2].name, "model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(qwen2[2].shape, (std::vector<int64_t>{16, 16}));
  auto qwen3 = ListWeightSpecs(SmallConfig("qwen3", false));
  EXPECT_EQ(qwen3.size(), 1u + 2 * 11 + 2);  // 9 + q_norm/k_norm per layer, + lm_head
  EXPECT_EQ(qwen3.back().name, "lm_head.weight");
  EXPECT_EQ(qwen3[2].shape, (std::vector<int64_t>{32, 16}));  // q_proj [nh*hd, H]
  EXPECT_EQ(qwen3[5].name, "model.layers.0.self_attn.o_proj.weight");
  EXPECT_EQ(qwen3[5].shape, (std::vector<int64_t>{16, 32}));
}

TEST(WeightBindingTest, BindsEveryFieldWithoutCopying) {
  ModelConfig config = SmallConfig("qwen2", true);
  auto store = FullStore(config, DType::kBF16);
  auto w = BindWeights(config, *store);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->dtype, DType::kBF16);
  EXPECT_EQ(w->embed_tokens.data, store->Find("model.embed_tokens.weight")->data);
  EXPECT_EQ(w->lm_head.data, w->embed_tokens.data);  // tied
  ASSERT_EQ(w->layers.size(), 2u);
  const LayerWeights& l1 = w->layers[1];
  EXPECT_EQ(l1.k_bias.data, store->Find("model.layers.1.self_attn.k_proj.bias")->data);
  EXPECT_EQ(l1.down_proj.data, store->Find("model.layers.1.mlp.down_proj.weight")->data);
  EXPECT_EQ(l1.down_proj.shape, (std::vector<int64_t>{16, 24}));
  EXPECT_TRUE(l1.o_bias.empty());
  EXPECT_TRUE(l1.q_norm.empty());
  EXPECT_FALSE(w->storage.empty());
}

TEST(WeightBindingTest, Qwen3UntiedHasNormsAndSeparateHead) {
  ModelConfig config = SmallConfig("qwen3", false);
  auto store = FullStore(config, DType::kF32);
  auto w = BindWeights(config, *store);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->lm_head.data, store->Find("lm_head.weight")->data);
  EXPECT_NE(w->lm_head.data, w->embed_tokens.data);
  EXPECT_EQ(w->layers[0].q_norm.shape, std::vector<int64_t>{8});
  EXPECT_TRUE(w->layers[0].q_bias.empty());
}

TEST(WeightBindingTest, MissingTensorIsNamed) {
  ModelConfig config = SmallConfig("qwen3", false);
  auto full = FullStore(config, DType::kBF16);
  TensorStore partial;
  for (const std::string& name : full->Names()) {
    if (name == "model.layers.1.self_attn.k_norm.weight") continue;
    const TensorView* v = full->Find(name);
    partial.Allocate(name, v->dtype, v->shape);
  }
  auto w = BindWeights(config, partial);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kNotFound);
  EXPECT_NE(w.status().message().find("'model.layers.1.self_attn.k_norm.weight'"), std::string::npos);
  EXPECT_NE(w.status().message().find("[8]"), std::string::npos);
}

// A corrupt layer count is an error naming it, not an allocation of 2^32 layers.
TEST(WeightBindingTest, ImpossibleLayerCountIsAnError) {
  ModelConfig config = SmallConfig("qwen3", false);
  auto full = FullStore(config, DType::kBF16);
  config.num_hidden_layers = 4294967295;
  auto w = BindWeights(config, *full);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(w.status().message().find("4294967295 decoder layers"), std::string::npos) << w.status();
}

TEST(WeightBindingTest, WrongShapeShowsBothShapes) {
  ModelConfig config = SmallConfig("qwen2", true);
  auto store = FullStore(config, DType::kBF16);
  store->Allocate("model.layers.0.mlp.up_proj.weight", DType::kBF16, {16, 24});  // transposed
  auto w = BindWeights(config, *store);
  ASSERT_FALSE(w.ok());
  const std::string& m = w.status().message();
  EXPECT_NE(m.find("'model.layers.0.mlp.up_proj.weight'"), std::string::npos) << m;
  EXPECT_NE(m.find("[16, 24]"), std::string::npos) << m;
  EXPECT_NE(m.find("[24, 16]"), std::string::npos) << m;
}

TEST(WeightBindingTest, WrongDtypeFailsExtrasAreIgnored) {
  ModelConfig config = SmallConfig("qwen2", true);
  auto store = FullStore(config, DType::kBF16);
  store->Allocate("model.layers.0.self_attn.rotary_emb.inv_freq", DType::kF32, {2});
  store->Allocate("lm_head.weight", DType::kBF16, {50, 16});  // present although tied
  EXPECT_TRUE(BindWeights(config, *store).ok());
  store->Allocate("model.norm.weight", DType::kI32, {16});
  auto w = BindWeights(config, *store);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("'model.norm.weight'"), std::string::npos);
  EXPECT_NE(w.status().message().find("i32"), std::string::npos);
}

TEST(WeightBindingTest, ConvertWeightsChangesDtypeAndKeepsValues) {
  ModelConfig config = SmallConfig("qwen2", true);
  auto store = FullStore(config, DType::kBF16);
  ModelWeights bf16 = BindWeights(config, *store).value();
  auto f32 = ConvertWeights(bf16, DType::kF32);
  ASSERT_TRUE(f32.ok()) << f32.status();
  EXPECT_EQ(f32->dtype, DType::kF32);
  EXPECT_EQ(f32->layers[1].v_bias.dtype, DType::kF32);
  EXPECT_EQ(f32->lm_head.data, f32->embed_tokens.data);
  EXPECT_NE(f32->embed_tokens.data, bf16.embed_tokens.data);
  for (int64_t i : {0, 1, 7, 333, 799}) {
    EXPECT_EQ(f32->embed_tokens.as<float>()[i], Bf16ToF32(bf16.embed_tokens.as<uint16_t>()[i])) << i;
    EXPECT_EQ(f32->embed_tokens.as<float>()[i], static_cast<float>(i % 128) * 0.5f) << i;
  }
  EXPECT_EQ(WeightBytes(*f32), 2 * WeightBytes(bf16));
  // f32 -> f16 rounds as F32ToF16 does.
  f32->norm.as<float>()[3] = 0.1f;
  auto f16 = ConvertWeights(*f32, DType::kF16);
  ASSERT_TRUE(f16.ok());
  EXPECT_EQ(f16->norm.as<uint16_t>()[3], F32ToF16(0.1f));
  EXPECT_FALSE(ConvertWeights(bf16, DType::kI8).ok());
}

TEST(WeightBindingTest, MixedDtypesAreUnifiedToTheMajority) {
  ModelConfig config = SmallConfig("qwen3", false);
  auto store = FullStore(config, DType::kBF16);
  TensorView& norm = store->Allocate("model.norm.weight", DType::kF32, {16});
  norm.as<float>()[0] = 1.25f;
  auto w = BindWeights(config, *store);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->dtype, DType::kBF16);
  EXPECT_EQ(w->norm.dtype, DType::kBF16);
  EXPECT_EQ(Bf16ToF32(w->norm.as<uint16_t>()[0]), 1.25f);
}

TEST(WeightBindingTest, ResolveDtype) {
  EXPECT_EQ(ResolveDtype("auto", DType::kBF16).value(), DType::kBF16);
  EXPECT_EQ(ResolveDtype("float32", DType::kBF16).value(), DType::kF32);
  EXPECT_EQ(ResolveDtype("half", DType::kBF16).value(), DType::kF16);
  auto bad = ResolveDtype("int4", DType::kBF16);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--dtype"), std::string::npos);
}


ModelConfig PresetLike(const std::string& name) {
  Json j = ParseJson(R"({"model_type": "qwen3_5_moe", "tie_word_embeddings": false, "text_config": {
    "vocab_size": 50, "hidden_size": 16, "num_hidden_layers": 4, "num_attention_heads": 2,
    "num_key_value_heads": 1, "head_dim": 16, "partial_rotary_factor": 0.25, "linear_key_head_dim": 16,
    "linear_value_head_dim": 16, "linear_num_key_heads": 1, "linear_num_value_heads": 2,
    "num_experts": 3, "num_experts_per_tok": 2, "moe_intermediate_size": 8,
    "shared_expert_intermediate_size": 8}})", "t").value();
  if (name == "qwen3_moe") {
    j = Json{{"model_type", "qwen3_moe"}, {"vocab_size", 50}, {"hidden_size", 16}, {"intermediate_size", 24},
             {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"head_dim", 8},
             {"num_experts", 3}, {"num_experts_per_tok", 2}, {"moe_intermediate_size", 8}};
  }
  return ParseModelConfig(j).value();
}

TEST(WeightSpecTest, Qwen35MoeNamesAndFusedExperts) {
  ModelConfig c = PresetLike("qwen3_5_moe");
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const WeightSpec& s : ListWeightSpecs(c)) shapes[s.name] = s.shape;
  const std::string p = "model.language_model.layers.";
  EXPECT_EQ(shapes["model.language_model.embed_tokens.weight"], (std::vector<int64_t>{50, 16}));
  EXPECT_EQ(shapes["lm_head.weight"], (std::vector<int64_t>{50, 16}));
  EXPECT_EQ(shapes[p + "0.linear_attn.in_proj_qkv.weight"], (std::vector<int64_t>{2 * 16 + 32, 16}));
  EXPECT_EQ(shapes[p + "0.linear_attn.conv1d.weight"], (std::vector<int64_t>{64, 1, 4}));
  EXPECT_EQ(shapes[p + "0.linear_attn.A_log"], (std::vector<int64_t>{2}));
  EXPECT_EQ(shapes[p + "3.self_attn.q_proj.weight"], (std::vector<int64_t>{2 * 2 * 16, 16}));  // [q | gate]
  EXPECT_EQ(shapes.count(p + "0.self_attn.q_proj.weight"), 0u);
  EXPECT_EQ(shapes.count(p + "3.linear_attn.out_proj.weight"), 0u);
  EXPECT_EQ(shapes[p + "1.mlp.experts.gate_up_proj"], (std::vector<int64_t>{3, 16, 16}));
  EXPECT_EQ(shapes[p + "1.mlp.experts.down_proj"], (std::vector<int64_t>{3, 16, 8}));
  EXPECT_EQ(shapes[p + "1.mlp.shared_expert_gate.weight"], (std::vector<int64_t>{1, 16}));
  EXPECT_EQ(shapes.count(p + "1.mlp.gate_proj.weight"), 0u);
}

TEST(WeightBindingTest, MoeAndHybridBindAndSkipMtpAndVision) {
  for (const char* name : {"qwen3_moe", "qwen3_5_moe"}) {
    ModelConfig c = PresetLike(name);
    auto store = FullStore(c, DType::kBF16);
    store->Allocate("mtp.fc.weight", DType::kBF16, {16, 32});
    store->Allocate("model.visual.blocks.0.attn.qkv.weight", DType::kBF16, {8, 8});
    auto w = BindWeights(c, *store);
    ASSERT_TRUE(w.ok()) << w.status();
    const LayerWeights& l1 = w->layers[1];
    EXPECT_FALSE(l1.moe_router.empty()) << name;
    if (c.fused_experts) {
      EXPECT_FALSE(l1.experts_gate_up.empty());
      EXPECT_FALSE(w->layers[0].gdn_in_proj_qkv.empty());
      EXPECT_FALSE(w->layers[3].q_proj.empty());
      EXPECT_TRUE(w->layers[0].q_proj.empty());
    } else {
      ASSERT_EQ(l1.expert_gate_proj.size(), 3u);
      EXPECT_EQ(l1.expert_up_proj[2].data, store->Find("model.layers.1.mlp.experts.2.up_proj.weight")->data);
      EXPECT_EQ(l1.expert_down_proj[0].shape, (std::vector<int64_t>{16, 8}));
    }
    // ConvertWeights reaches the new fields too.
    auto f32 = ConvertWeights(*w, DType::kF32);
    ASSERT_TRUE(f32.ok());
    EXPECT_EQ(f32->layers[1].moe_router.dtype, DType::kF32);
    if (!c.fused_experts) EXPECT_EQ(f32->layers[1].expert_down_proj[2].dtype, DType::kF32);
    if (c.fused_experts) EXPECT_EQ(f32->layers[0].gdn_conv1d.dtype, DType::kF32);
  }
}

TEST(WeightBindingTest, MissingExpertIsNamed) {
  ModelConfig c = PresetLike("qwen3_moe");
  auto store = FullStore(c, DType::kBF16);
  TensorStore partial;
  for (const std::string& n : store->Names()) {
    if (n == "model.layers.1.mlp.experts.2.down_proj.weight") continue;
    const TensorView* v = store->Find(n);
    partial.Allocate(n, v->dtype, v->shape);
  }
  auto w = BindWeights(c, partial);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("model.layers.1.mlp.experts.2.down_proj.weight"), std::string::npos);
  EXPECT_FALSE(IsSkippedAuxiliaryTensor("model.layers.0.mlp.gate.weight"));
  EXPECT_TRUE(IsSkippedAuxiliaryTensor("mtp.layers.0.mlp.gate.weight"));
}
}  // namespace
}  // namespace pagellm
