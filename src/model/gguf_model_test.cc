// ConvertToGguf + LoadModel on .gguf files: tensor types as llama.cpp's converter picks
// them, config and eos ids from metadata, weights equal to the safetensors source
// (exactly for f32/bf16/f16; within Q8_0's per-block bound for q8_0), clear errors on
// malformed files. Cross-engine checks live in tests/parity (llama.cpp) and tests/gguf.
#include <cmath>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/mapped_file.h"
#include "gguf/gguf_file.h"
#include "model/convert.h"
#include "model/gguf_config.h"
#include "model/gguf_convert.h"
#include "model/gguf_loader.h"
#include "model/gguf_test_util.h"
#include "model/model_loader.h"
#include "model/weight_spec.h"

namespace pagellm {
namespace {

std::string TinyDir(const std::string& preset) {
  return testing_util::TinyCheckpointDir(preset, "gguf_model_test", 7);
}

std::string Convert(const std::string& preset, GgmlType outtype) {
  GgufConvertOptions options;
  options.model_dir = TinyDir(preset);
  options.outfile = fmt::format("{}/{}_{}.gguf", ::testing::TempDir(), preset, GgmlTypeName(outtype));
  options.outtype = outtype;
  auto report = ConvertToGguf(options);
  EXPECT_TRUE(report.ok()) << report.status();
  return options.outfile;
}

LoadedModel Load(const std::string& path, const std::string& dtype = "auto") {
  LoadOptions options;
  options.model_path = path;
  options.dtype = dtype;
  auto model = LoadModel(options);
  EXPECT_TRUE(model.ok()) << model.status();
  return std::move(model).value();
}

// Every (name, view) pair of a model, in spec order.
std::vector<std::pair<std::string, const TensorView*>> Views(const ModelConfig& c, const ModelWeights& w) {
  std::vector<std::pair<std::string, const TensorView*>> out = {{"embed", &w.embed_tokens}, {"norm", &w.norm},
                                                                {"lm_head", &w.lm_head}};
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const LayerWeights& L = w.layers[l];
    for (const TensorView* v : {&L.input_layernorm, &L.q_proj, &L.k_proj, &L.v_proj, &L.q_bias, &L.k_bias, &L.v_bias,
                                &L.o_proj, &L.q_norm, &L.k_norm, &L.post_attention_layernorm, &L.gate_proj, &L.up_proj,
                                &L.down_proj}) {
      out.emplace_back(fmt::format("layer {} #{}", l, out.size()), v);
    }
  }
  return out;
}

// Max |a - b| over all weights, or -1 if shapes/presence differ.
double MaxWeightDiff(const LoadedModel& a, const LoadedModel& b) {
  auto va = Views(a.config, a.weights), vb = Views(b.config, b.weights);
  double max_diff = 0;
  for (size_t i = 0; i < va.size(); ++i) {
    const TensorView &x = *va[i].second, &y = *vb[i].second;
    if (x.empty() != y.empty() || x.shape != y.shape) return -1;
    if (x.empty()) continue;
    for (int64_t j = 0; j < x.numel(); ++j) {
      max_diff = std::max<double>(max_diff, std::fabs(ReadElementAsFloat(x, j) - ReadElementAsFloat(y, j)));
    }
  }
  return max_diff;
}

TEST(GgufConvertTest, TensorTypesFollowLlamaCppConverter) {
  EXPECT_EQ(GgufTensorTypeFor("blk.0.attn_norm.weight", 1, 64, GgmlType::kQ8_0), GgmlType::kF32);
  EXPECT_EQ(GgufTensorTypeFor("blk.0.attn_q_norm.weight", 1, 32, GgmlType::kF16), GgmlType::kF32);
  EXPECT_EQ(GgufTensorTypeFor("blk.0.attn_q.bias", 1, 64, GgmlType::kBF16), GgmlType::kF32);
  EXPECT_EQ(GgufTensorTypeFor("blk.0.attn_q.weight", 2, 64, GgmlType::kQ8_0), GgmlType::kQ8_0);
  EXPECT_EQ(GgufTensorTypeFor("blk.0.ffn_down.weight", 2, 48, GgmlType::kQ8_0), GgmlType::kF16);  // 48 % 32 != 0
  EXPECT_EQ(GgufTensorTypeFor("token_embd.weight", 2, 64, GgmlType::kBF16), GgmlType::kBF16);

  auto gguf = GgufFile::Open(Convert("qwen2-tiny", GgmlType::kQ8_0)).value();
  EXPECT_EQ(gguf->FindTensor("token_embd.weight")->type, GgmlType::kQ8_0);
  EXPECT_EQ(gguf->FindTensor("blk.1.attn_k.bias")->type, GgmlType::kF32);
  EXPECT_EQ(gguf->FindTensor("blk.1.ffn_norm.weight")->type, GgmlType::kF32);
  EXPECT_EQ(gguf->FindTensor("output.weight"), nullptr);  // tied
  EXPECT_EQ(gguf->GetInt("general.file_type").value(), 7);
  EXPECT_EQ(gguf->GetString("tokenizer.ggml.pre").value(), "qwen2");
}

TEST(GgufModelTest, ConfigAndEosMatchTheCheckpoint) {
  for (const char* preset : {"qwen2-tiny", "qwen3-tiny"}) {
    LoadedModel hf = Load(TinyDir(preset));
    std::string path = Convert(preset, GgmlType::kBF16);
    LoadedModel gg = Load(path);
    const ModelConfig &a = hf.config, &b = gg.config;
    EXPECT_EQ(a.model_type, b.model_type);
    EXPECT_EQ(std::tie(a.vocab_size, a.hidden_size, a.intermediate_size, a.num_hidden_layers, a.num_attention_heads,
                       a.num_key_value_heads, a.head_dim, a.max_position_embeddings),
              std::tie(b.vocab_size, b.hidden_size, b.intermediate_size, b.num_hidden_layers, b.num_attention_heads,
                       b.num_key_value_heads, b.head_dim, b.max_position_embeddings))
        << preset;
    EXPECT_FLOAT_EQ(a.rms_norm_eps, b.rms_norm_eps);
    EXPECT_DOUBLE_EQ(a.rope_theta, b.rope_theta);
    EXPECT_EQ(std::tie(a.tie_word_embeddings, a.qkv_bias, a.qk_norm, a.o_bias),
              std::tie(b.tie_word_embeddings, b.qkv_bias, b.qk_norm, b.o_bias));
    // HF's generation_config lists <|im_end|>, <|endoftext|>; GGUF derives the same set.
    EXPECT_EQ(gg.generation_config.eos_token_ids, hf.generation_config.eos_token_ids) << preset;
    EXPECT_EQ(gg.tokenizer_path, path);
    EXPECT_EQ(gg.weights.dtype, DType::kBF16);
  }
}

TEST(GgufModelTest, FloatTypesRoundTripExactly) {
  LoadedModel hf = Load(TinyDir("qwen3-tiny"));
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16}) {
    LoadedModel gg = Load(Convert("qwen3-tiny", type));
    // bf16 values are exact in f32; in f16 too except below 2^-14, where f16 is subnormal
    // and rounds to a multiple of 2^-24 (error <= 2^-25), as numpy's astype(float16) does.
    double bound = type == GgmlType::kF16 ? std::ldexp(1.0, -25) : 0.0;
    double diff = MaxWeightDiff(hf, gg);
    EXPECT_GE(diff, 0.0) << GgmlTypeName(type);
    EXPECT_LE(diff, bound) << GgmlTypeName(type);
  }
  // bf16 views point into the mapping (no copy) for a BF16 file.
  std::string path = Convert("qwen2-tiny", GgmlType::kBF16);
  auto gguf = GgufFile::Open(path).value();
  LoadedModel gg = Load(path);
  EXPECT_EQ(std::memcmp(gg.weights.layers[0].q_proj.data, gguf->FindTensor("blk.0.attn_q.weight")->data.data(),
                        gg.weights.layers[0].q_proj.nbytes()),
            0);
}

// Q8_0: every value within one step (amax/127) of its 32-block, the bound of
// round(x/d) with d = amax/127 (plus fp16 rounding of d); f32 dequantization is exact.
TEST(GgufModelTest, Q8_0WeightsWithinBlockBound) {
  LoadedModel hf = Load(TinyDir("qwen3-tiny"), "float32");
  LoadedModel gg = Load(Convert("qwen3-tiny", GgmlType::kQ8_0), "float32");
  auto va = Views(hf.config, hf.weights), vb = Views(gg.config, gg.weights);
  int64_t num_checked = 0;
  for (size_t i = 0; i < va.size(); ++i) {
    const TensorView &x = *va[i].second, &y = *vb[i].second;
    ASSERT_EQ(x.shape, y.shape) << va[i].first;
    if (x.empty()) continue;
    const float* a = x.as<float>();
    const float* b = y.as<float>();
    bool quantized = x.rank() == 2;
    for (int64_t blk = 0; blk < x.numel(); blk += 32) {
      int64_t n = std::min<int64_t>(32, x.numel() - blk);
      float amax = 0;
      for (int64_t j = 0; j < n; ++j) amax = std::max(amax, std::fabs(a[blk + j]));
      float bound = quantized ? amax / 127.0f * 1.01f : 0.0f;
      for (int64_t j = 0; j < n; ++j) {
        ASSERT_LE(std::fabs(a[blk + j] - b[blk + j]), bound) << va[i].first << " at " << blk + j;
        ++num_checked;
      }
    }
  }
  EXPECT_GT(num_checked, 2 * 151936 * 64);
}

// --dtype auto binds Q8_0 linears and the embedding in place (the backend's int8 path)
// and keeps the F32 norms as they are in the file.
TEST(GgufModelTest, Q8_0BindsNativelyUnderAuto) {
  std::string path = Convert("qwen2-tiny", GgmlType::kQ8_0);
  auto gguf = GgufFile::Open(path).value();
  LoadedModel gg = Load(path);
  const LayerWeights& l0 = gg.weights.layers[0];
  EXPECT_EQ(gg.weights.dtype, DType::kQ8_0);
  EXPECT_EQ(l0.q_proj.dtype, DType::kQ8_0);
  EXPECT_EQ(gg.weights.embed_tokens.dtype, DType::kQ8_0);
  EXPECT_EQ(l0.input_layernorm.dtype, DType::kF32);
  EXPECT_EQ(l0.q_bias.dtype, DType::kF32);
  const GgufTensorInfo* down = gguf->FindTensor("blk.0.ffn_down.weight");
  EXPECT_EQ(l0.down_proj.nbytes(), down->num_bytes());
  EXPECT_EQ(std::memcmp(l0.down_proj.data, down->data.data(), down->num_bytes()), 0);
  EXPECT_EQ(gg.weights.lm_head.data, gg.weights.embed_tokens.data);  // tied
}

TEST(GgufModelTest, MalformedFilesFailWithAMessage) {
  std::string path = Convert("qwen2-tiny", GgmlType::kF16);
  std::string bytes = ReadFileToString(path).value();
  std::string bad = ::testing::TempDir() + "/truncated.gguf";
  for (size_t len : {size_t{3}, size_t{24}, bytes.size() / 100, bytes.size() - 1}) {
    ASSERT_TRUE(WriteStringToFile(bad, std::string_view(bytes).substr(0, len)).ok());
    LoadOptions options;
    options.model_path = bad;
    auto model = LoadModel(options);
    ASSERT_FALSE(model.ok()) << len;
    EXPECT_NE(model.status().message().find("truncated.gguf"), std::string::npos) << model.status();
  }
  EXPECT_TRUE(IsGgufPath(path));
  EXPECT_FALSE(IsGgufPath(TinyDir("qwen2-tiny")));
}

// A block_count no checkpoint could hold (a corrupt or hostile file) fails with a message
// naming it, before anything is sized by it.
TEST(GgufModelTest, ImpossibleBlockCountFailsWithAMessage) {
  std::string bytes = ReadFileToString(Convert("qwen2-tiny", GgmlType::kF16)).value();
  const std::string key = "qwen2.block_count";
  const size_t at = bytes.find(key);
  ASSERT_NE(at, std::string::npos);
  uint32_t type = 0;
  std::memcpy(&type, bytes.data() + at + key.size(), 4);
  ASSERT_EQ(type, 4u);  // GGUF uint32
  const uint32_t huge = 4294967295u;
  std::memcpy(bytes.data() + at + key.size() + 4, &huge, 4);
  std::string bad = ::testing::TempDir() + "/block_count.gguf";
  ASSERT_TRUE(WriteStringToFile(bad, bytes).ok());
  LoadOptions options;
  options.model_path = bad;
  auto model = LoadModel(options);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("4294967295 decoder layers"), std::string::npos) << model.status();
  std::remove(bad.c_str());
}

TEST(GgufModelTest, UnsupportedArchitectureIsUnimplemented) {
  std::string path = Convert("qwen2-tiny", GgmlType::kF16);
  std::string bytes = ReadFileToString(path).value();
  size_t pos = bytes.find("qwen2");  // general.architecture's value comes first
  ASSERT_NE(pos, std::string::npos);
  bytes.replace(pos, 5, "llama");
  std::string bad = ::testing::TempDir() + "/llama_arch.gguf";
  ASSERT_TRUE(WriteStringToFile(bad, bytes).ok());
  LoadOptions options;
  options.model_path = bad;
  auto model = LoadModel(options);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kUnimplemented) << model.status();
  EXPECT_NE(model.status().message().find("'llama'"), std::string::npos) << model.status();
}

}  // namespace
}  // namespace pagellm
