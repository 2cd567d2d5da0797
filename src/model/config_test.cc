#include "model/config.h"

#include <gtest/gtest.h>

namespace pagellm {
namespace {

// Published Qwen2.5-0.5B-Instruct config.json (no head_dim key).
Json Qwen2Json() {
  return ParseJson(R"({
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
    "eos_token_id": 151645, "hidden_act": "silu", "hidden_size": 896, "initializer_range": 0.02,
    "intermediate_size": 4864, "max_position_embeddings": 32768, "max_window_layers": 21,
    "model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2,
    "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": true,
    "torch_dtype": "bfloat16", "transformers_version": "4.43.1", "use_cache": true,
    "use_sliding_window": false, "vocab_size": 151936})", "test").value();
}

// Published Qwen3-0.6B config.json.
Json Qwen3Json() {
  return ParseJson(R"({
    "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
    "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072,
    "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
    "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
    "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null, "tie_word_embeddings": true,
    "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": true,
    "use_sliding_window": false, "vocab_size": 151936})", "test").value();
}

std::string ErrorOf(const Json& json) {
  auto config = ParseModelConfig(json);
  EXPECT_FALSE(config.ok());
  return config.ok() ? "" : config.status().message();
}

TEST(ConfigTest, Qwen2DerivesHeadDimAndAlwaysHasQkvBias) {
  auto c = ParseModelConfig(Qwen2Json());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->arch, ModelArch::kQwen2);
  EXPECT_EQ(c->head_dim, 64);  // 896 / 14
  EXPECT_EQ(c->num_key_value_heads, 2);
  EXPECT_EQ(c->num_hidden_layers, 24);
  EXPECT_EQ(c->intermediate_size, 4864);
  EXPECT_TRUE(c->qkv_bias);
  EXPECT_FALSE(c->o_bias);
  EXPECT_FALSE(c->qk_norm);
  EXPECT_TRUE(c->tie_word_embeddings);
  EXPECT_DOUBLE_EQ(c->rope_theta, 1e6);
  EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kNone);
  EXPECT_EQ(c->torch_dtype, DType::kBF16);
  EXPECT_EQ(c->bos_token_id, 151643);
  EXPECT_EQ(c->eos_token_ids, std::vector<int64_t>{151645});
  EXPECT_EQ(c->rotary_dim(), 64);
}

TEST(ConfigTest, Qwen2IgnoresAttentionBiasKey) {
  Json j = Qwen2Json();
  j["attention_bias"] = false;
  auto c = ParseModelConfig(j);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->qkv_bias);
  EXPECT_FALSE(c->o_bias);
}

TEST(ConfigTest, Qwen3ExplicitHeadDimAndQkNorm) {
  auto c = ParseModelConfig(Qwen3Json());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->arch, ModelArch::kQwen3);
  EXPECT_EQ(c->head_dim, 128);
  EXPECT_EQ(c->q_size(), 2048);  // != hidden_size
  EXPECT_EQ(c->kv_size(), 1024);
  EXPECT_TRUE(c->qk_norm);
  EXPECT_FALSE(c->qkv_bias);
  EXPECT_FALSE(c->o_bias);
  EXPECT_EQ(c->max_position_embeddings, 40960);
}

TEST(ConfigTest, Qwen3AttentionBiasGivesQkvAndOBiases) {
  Json j = Qwen3Json();
  j["attention_bias"] = true;
  auto c = ParseModelConfig(j);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->qkv_bias);
  EXPECT_TRUE(c->o_bias);
}

TEST(ConfigTest, LegacyYarnWithType) {
  Json j = Qwen2Json();
  j["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}};
  auto c = ParseModelConfig(j);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kYarn);
  EXPECT_DOUBLE_EQ(c->rope_scaling.factor, 4.0);
  EXPECT_EQ(c->rope_scaling.original_max_position_embeddings, 32768);
  EXPECT_DOUBLE_EQ(c->rope_scaling.beta_fast, 32.0);
  EXPECT_DOUBLE_EQ(c->rope_scaling.beta_slow, 1.0);
  EXPECT_FALSE(c->rope_scaling.attention_factor.has_value());
}

TEST(ConfigTest, YarnWithRopeTypeAndAllFields) {
  Json j = Qwen3Json();
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 2.0},    {"original_max_position_embeddings", 4096},
                       {"beta_fast", 16.0},   {"beta_slow", 2.0}, {"attention_factor", 1.25}};
  auto c = ParseModelConfig(j);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kYarn);
  EXPECT_DOUBLE_EQ(c->rope_scaling.beta_fast, 16.0);
  EXPECT_DOUBLE_EQ(c->rope_scaling.beta_slow, 2.0);
  EXPECT_EQ(c->rope_scaling.original_max_position_embeddings, 4096);
  ASSERT_TRUE(c->rope_scaling.attention_factor.has_value());
  EXPECT_DOUBLE_EQ(*c->rope_scaling.attention_factor, 1.25);
}

TEST(ConfigTest, YarnWithoutOriginalUsesMaxPositions) {
  Json j = Qwen3Json();
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  auto c = ParseModelConfig(j);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->rope_scaling.original_max_position_embeddings, 40960);
}

TEST(ConfigTest, LinearAndDynamicScaling) {
  Json j = Qwen3Json();
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  auto linear = ParseModelConfig(j);
  ASSERT_TRUE(linear.ok()) << linear.status();
  EXPECT_EQ(linear->rope_scaling.type, RopeScalingType::kLinear);
  EXPECT_DOUBLE_EQ(linear->rope_scaling.factor, 2.0);
  j["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 3.0}};
  auto dynamic = ParseModelConfig(j);
  ASSERT_TRUE(dynamic.ok()) << dynamic.status();
  EXPECT_EQ(dynamic->rope_scaling.type, RopeScalingType::kDynamic);
  EXPECT_DOUBLE_EQ(dynamic->rope_scaling.factor, 3.0);
}

TEST(ConfigTest, DefaultRopeTypeMeansNone) {
  Json j = Qwen3Json();
  j["rope_scaling"] = {{"rope_type", "default"}};
  auto c = ParseModelConfig(j);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kNone);
}

TEST(ConfigTest, RopeParametersBlock) {
  Json j = Qwen3Json();
  j.erase("rope_theta");
  j.erase("rope_scaling");
  j["rope_parameters"] = {{"rope_type", "linear"}, {"factor", 2.0}, {"rope_theta", 5000000.0},
                          {"partial_rotary_factor", 0.5}};
  auto c = ParseModelConfig(j);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_DOUBLE_EQ(c->rope_theta, 5e6);
  EXPECT_DOUBLE_EQ(c->partial_rotary_factor, 0.5);
  EXPECT_EQ(c->rotary_dim(), 64);
  EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kLinear);
}

TEST(ConfigTest, EosListAndDtypeAlias) {
  Json j = Qwen3Json();
  j["eos_token_id"] = {151645, 151643};
  j.erase("torch_dtype");
  j["dtype"] = "float32";
  auto c = ParseModelConfig(j);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->eos_token_ids, (std::vector<int64_t>{151645, 151643}));
  EXPECT_EQ(c->torch_dtype, DType::kF32);
}

TEST(ConfigTest, UnsupportedModelTypes) {
  for (const char* type : {"qwen2_moe", "llama", "qwen3_vl"}) {
    Json j = Qwen3Json();
    j["model_type"] = type;
    auto c = ParseModelConfig(j);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), StatusCode::kUnimplemented);
    EXPECT_NE(c.status().message().find(std::string("model type '") + type + "' is not supported yet"),
              std::string::npos)
        << c.status();
  }
}

TEST(ConfigTest, BadValuesNameTheKey) {
  struct Case {
    const char* key;
    Json value;
    const char* expected;
  };
  std::vector<Case> cases = {
      {"hidden_size", 0, "'hidden_size' must be positive"},
      {"num_hidden_layers", -1, "'num_hidden_layers' must be positive"},
      {"num_key_value_heads", 5, "multiple of 'num_key_value_heads'"},
      {"head_dim", 127, "'head_dim' must be positive and even"},
      {"vocab_size", "big", "'vocab_size' must be an integer"},
      {"rms_norm_eps", 0.0, "'rms_norm_eps'"},
      {"tie_word_embeddings", 1, "'tie_word_embeddings' must be a boolean"},
      {"torch_dtype", "int8", "'torch_dtype'"},
      {"use_sliding_window", true, "'use_sliding_window'"},
      {"eos_token_id", 999999, "'eos_token_id'"},
      {"rope_scaling", Json{{"type", "longrope"}, {"factor", 2.0}}, "'longrope'"},
      {"rope_scaling", Json{{"type", "yarn"}}, "'rope_scaling.factor'"},
      {"max_position_embeddings", int64_t{4294967297}, "'max_position_embeddings' must be in [1, 2147483647]"},
  };
  for (const Case& c : cases) {
    Json j = Qwen3Json();
    j[c.key] = c.value;
    std::string error = ErrorOf(j);
    EXPECT_NE(error.find(c.expected), std::string::npos) << c.key << ": " << error;
  }
  Json missing = Qwen3Json();
  missing.erase("intermediate_size");
  EXPECT_NE(ErrorOf(missing).find("missing required key 'intermediate_size'"), std::string::npos);
  Json qwen2 = Qwen2Json();
  qwen2["num_attention_heads"] = 13;  // 896 % 13 != 0 and no head_dim
  qwen2["num_key_value_heads"] = 13;
  EXPECT_NE(ErrorOf(qwen2).find("no 'head_dim'"), std::string::npos);
}

TEST(ConfigTest, LoadModelConfigNamesTheFile) {
  auto missing = LoadModelConfig("/nonexistent/model");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/model/config.json"), std::string::npos);
}

// Published Qwen3-30B-A3B config.json (MoE keys).
Json Qwen3MoeJson() {
  return ParseJson(R"({
    "architectures": ["Qwen3MoeForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 151643, "decoder_sparse_step": 1, "eos_token_id": 151645, "head_dim": 128,
    "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 6144,
    "max_position_embeddings": 40960, "max_window_layers": 48, "mlp_only_layers": [], "model_type": "qwen3_moe",
    "moe_intermediate_size": 768, "norm_topk_prob": true, "num_attention_heads": 32, "num_experts": 128,
    "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_key_value_heads": 4, "output_router_logits": false,
    "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001,
    "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16", "use_cache": true,
    "use_sliding_window": false, "vocab_size": 151936})", "test").value();
}

// Qwen3.5-35B-A3B layout: text keys nested in text_config, rope_parameters, no
// intermediate_size, top-level eos differing from the text one.
Json Qwen35MoeJson() {
  Json layer_types = Json::array();
  for (int i = 0; i < 40; ++i) layer_types.push_back((i + 1) % 4 == 0 ? "full_attention" : "linear_attention");
  Json text = ParseJson(R"({
    "attention_bias": false, "attn_output_gate": true, "dtype": "bfloat16", "eos_token_id": 248044,
    "full_attention_interval": 4, "head_dim": 256, "hidden_act": "silu", "hidden_size": 2048,
    "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16,
    "linear_num_value_heads": 32, "linear_value_head_dim": 128, "mamba_ssm_dtype": "float32",
    "max_position_embeddings": 262144, "model_type": "qwen3_5_moe_text", "moe_intermediate_size": 512,
    "mtp_num_hidden_layers": 1, "num_attention_heads": 16, "num_experts": 256, "num_experts_per_tok": 8,
    "num_hidden_layers": 40, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
    "rope_parameters": {"mrope_interleaved": true, "mrope_section": [11, 11, 10], "partial_rotary_factor": 0.25,
                        "rope_theta": 10000000, "rope_type": "default"},
    "shared_expert_intermediate_size": 512, "tie_word_embeddings": true, "vocab_size": 248320})", "test").value();
  text["layer_types"] = layer_types;
  return Json{{"architectures", {"Qwen3_5MoeForConditionalGeneration"}}, {"model_type", "qwen3_5_moe"},
              {"text_config", text}, {"tie_word_embeddings", false}, {"eos_token_id", 248046},
              {"vision_config", {{"depth", 27}}}};
}

TEST(ConfigTest, Qwen3MoeReadsExpertKeys) {
  auto c = ParseModelConfig(Qwen3MoeJson());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->arch, ModelArch::kQwen3Moe);
  EXPECT_EQ(c->num_experts, 128);
  EXPECT_EQ(c->num_experts_per_tok, 8);
  EXPECT_EQ(c->moe_intermediate_size, 768);
  EXPECT_EQ(c->shared_expert_intermediate_size, 0);
  EXPECT_TRUE(c->norm_topk_prob);
  EXPECT_TRUE(c->qk_norm);
  EXPECT_FALSE(c->is_hybrid());
  EXPECT_FALSE(c->fused_experts);
  for (int64_t l = 0; l < 48; ++l) EXPECT_TRUE(c->IsMoeLayer(l));
  EXPECT_EQ(c->weight_prefix, "model.");
}

TEST(ConfigTest, Qwen3MoeSparseStepAndMlpOnlyLayers) {
  Json j = Qwen3MoeJson();
  j["decoder_sparse_step"] = 2;
  j["mlp_only_layers"] = {3};
  auto c = ParseModelConfig(j);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->IsMoeLayer(0));  // (0+1) % 2 != 0
  EXPECT_TRUE(c->IsMoeLayer(1));
  EXPECT_FALSE(c->IsMoeLayer(3));  // listed
  EXPECT_TRUE(c->IsMoeLayer(5));
  j["num_experts_per_tok"] = 129;
  EXPECT_NE(ErrorOf(j).find("num_experts_per_tok"), std::string::npos);
  j = Qwen3MoeJson();
  j["mlp_only_layers"] = {0};
  j.erase("intermediate_size");
  EXPECT_NE(ErrorOf(j).find("intermediate_size"), std::string::npos);
}

TEST(ConfigTest, Qwen35MoeMergesTextConfig) {
  auto c = ParseModelConfig(Qwen35MoeJson());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->arch, ModelArch::kQwen3_5Moe);
  EXPECT_EQ(c->model_type, "qwen3_5_moe");
  EXPECT_EQ(c->hidden_size, 2048);
  EXPECT_EQ(c->vocab_size, 248320);
  EXPECT_EQ(c->head_dim, 256);
  EXPECT_EQ(c->rotary_dim(), 64);
  EXPECT_DOUBLE_EQ(c->rope_theta, 1e7);
  EXPECT_EQ(c->mrope_section, (std::vector<int64_t>{11, 11, 10}));
  EXPECT_EQ(c->intermediate_size, 0);
  EXPECT_EQ(c->num_experts, 256);
  EXPECT_EQ(c->shared_expert_intermediate_size, 512);
  EXPECT_TRUE(c->fused_experts);
  EXPECT_TRUE(c->norm_topk_prob);
  EXPECT_FALSE(c->tie_word_embeddings);  // the top-level key wins over text_config's
  EXPECT_EQ(c->eos_token_ids, std::vector<int64_t>{248044});  // text_config merged over the top level
  EXPECT_TRUE(c->zero_centered_norms);
  EXPECT_TRUE(c->gated_attention);
  EXPECT_FALSE(c->grouped_gdn_projections);
  EXPECT_EQ(c->weight_prefix, "model.language_model.");
  EXPECT_EQ(c->linear_conv_dim(), 2 * 16 * 128 + 32 * 128);
  EXPECT_EQ(c->num_full_attention_layers(), 10);
  EXPECT_FALSE(c->IsFullAttentionLayer(0));
  EXPECT_TRUE(c->IsFullAttentionLayer(3));
  EXPECT_TRUE(c->IsFullAttentionLayer(39));
}

TEST(ConfigTest, Qwen3NextDerivesLayerTypesFromInterval) {
  Json j = Qwen3MoeJson();
  j["model_type"] = "qwen3_next";
  j["num_hidden_layers"] = 8;
  j["head_dim"] = 256;
  j["partial_rotary_factor"] = 0.25;
  j["full_attention_interval"] = 4;
  j["shared_expert_intermediate_size"] = 512;
  j["linear_key_head_dim"] = j["linear_value_head_dim"] = 128;
  j["linear_num_key_heads"] = 16;
  j["linear_num_value_heads"] = 32;
  auto c = ParseModelConfig(j);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->arch, ModelArch::kQwen3Next);
  EXPECT_TRUE(c->grouped_gdn_projections);
  EXPECT_EQ(c->weight_prefix, "model.");
  EXPECT_EQ(c->linear_conv_kernel_dim, 4);
  std::vector<bool> full;
  for (int64_t l = 0; l < 8; ++l) full.push_back(c->IsFullAttentionLayer(l));
  EXPECT_EQ(full, (std::vector<bool>{false, false, false, true, false, false, false, true}));
  j["linear_num_value_heads"] = 24;  // not a multiple of 16
  EXPECT_NE(ErrorOf(j).find("linear_num_value_heads"), std::string::npos);
  j["linear_num_value_heads"] = 32;
  j["layer_types"] = {"full_attention"};
  EXPECT_NE(ErrorOf(j).find("layer_types"), std::string::npos);
  j.erase("shared_expert_intermediate_size");
  j.erase("layer_types");
  EXPECT_NE(ErrorOf(j).find("shared_expert_intermediate_size"), std::string::npos);
}

TEST(ConfigTest, EveryPresetParsesAndDenseStaysDense) {
  auto c = ParseModelConfig(Qwen3Json());
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->is_moe());
  EXPECT_FALSE(c->is_hybrid());
  EXPECT_TRUE(c->IsFullAttentionLayer(5));
  EXPECT_EQ(c->num_full_attention_layers(), 28);
  EXPECT_FALSE(c->zero_centered_norms);
}

}  // namespace
}  // namespace pagellm
