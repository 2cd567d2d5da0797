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
  for (const char* type : {"qwen3_moe", "qwen3_next", "qwen3_5", "qwen3_5_moe", "llama"}) {
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

}  // namespace
}  // namespace pagellm
