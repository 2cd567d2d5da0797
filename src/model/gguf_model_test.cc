// ConvertToGguf + LoadModel on .gguf files: tensor types as llama.cpp's converter picks
// them, config and eos ids from metadata, weights equal to the safetensors source
// (exactly for f32/bf16/f16; within Q8_0's per-block bound for q8_0), clear errors on
// malformed files. Cross-engine checks live in tests/parity (llama.cpp) and tests/gguf.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>

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

// Where a GGUF's scalar metadata values and tensor-info fields sit, found by walking the
// file as the format defines it (a test's own walker, independent of GgufFile).
struct GgufLayout {
  struct Scalar {
    std::string key;
    uint32_t type = 0;
    size_t at = 0, bytes = 0;
  };
  struct Info {
    uint32_t n_dims = 0;
    size_t dims_at = 0, type_at = 0, offset_at = 0;
  };
  std::vector<Scalar> scalars;  // the model's keys, not tokenizer.*
  std::vector<Info> infos;
};

GgufLayout WalkGguf(const std::string& b) {
  GgufLayout layout;
  size_t o = 8;
  const auto u32 = [&](size_t at) { uint32_t v; std::memcpy(&v, b.data() + at, 4); return v; };
  const auto u64 = [&](size_t at) { uint64_t v; std::memcpy(&v, b.data() + at, 8); return v; };
  const uint64_t n_tensors = u64(o), n_kv = u64(o + 8);
  o += 16;
  const auto skip_string = [&](size_t at) { return at + 8 + u64(at); };
  const auto scalar_bytes = [](uint32_t t) -> size_t {
    switch (t) {
      case 0: case 1: case 7: return 1;
      case 2: case 3: return 2;
      case 4: case 5: case 6: return 4;
      default: return 8;  // 10, 11, 12
    }
  };
  std::function<size_t(uint32_t, size_t)> skip_value = [&](uint32_t t, size_t at) -> size_t {
    if (t == 8) return skip_string(at);
    if (t == 9) {
      const uint32_t et = u32(at);
      const uint64_t n = u64(at + 4);
      at += 12;
      for (uint64_t i = 0; i < n; ++i) at = skip_value(et, at);
      return at;
    }
    return at + scalar_bytes(t);
  };
  for (uint64_t i = 0; i < n_kv; ++i) {
    const std::string key = b.substr(o + 8, u64(o));
    o = skip_string(o);
    const uint32_t t = u32(o);
    o += 4;
    if (t != 8 && t != 9 && key.rfind("tokenizer.", 0) != 0) layout.scalars.push_back({key, t, o, scalar_bytes(t)});
    o = skip_value(t, o);
  }
  for (uint64_t i = 0; i < n_tensors; ++i) {
    o = skip_string(o);
    GgufLayout::Info info;
    info.n_dims = u32(o);
    info.dims_at = o + 4;
    info.type_at = info.dims_at + 8 * info.n_dims;
    info.offset_at = info.type_at + 4;
    o = info.offset_at + 8;
    layout.infos.push_back(info);
  }
  return layout;
}

// Each scalar of the model's metadata, and each tensor info's type, dims and offset, set to
// extreme values one at a time: every load either succeeds or fails with a message naming
// the file; none ends the process (a block_count of 4294967295 once did, in an allocation).
TEST(GgufModelTest, MutatedMetadataAndTensorInfosFailWithAMessage) {
  const std::string good = ReadFileToString(Convert("qwen2-tiny", GgmlType::kF16)).value();
  const GgufLayout layout = WalkGguf(good);
  ASSERT_GE(layout.scalars.size(), 8u);
  ASSERT_GE(layout.infos.size(), 10u);
  const std::string path = ::testing::TempDir() + "/mutated.gguf";
  ASSERT_TRUE(WriteStringToFile(path, good).ok());
  int failed = 0, loaded = 0;
  // Patches the bytes in place and puts them back after the load: the file is written once.
  const auto patch = [&](size_t at, const void* value, size_t size) {
    std::FILE* f = std::fopen(path.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fseek(f, static_cast<long>(at), SEEK_SET), 0);
    ASSERT_EQ(std::fwrite(value, 1, size, f), size);
    ASSERT_EQ(std::fclose(f), 0);
  };
  const auto try_load = [&](size_t at, const void* value, size_t size, const std::string& what) {
    patch(at, value, size);
    LoadOptions options;
    options.model_path = path;
    auto model = LoadModel(options);
    patch(at, good.data() + at, size);
    if (model.ok()) {
      ++loaded;
      return;
    }
    ++failed;
    EXPECT_NE(model.status().message().find("mutated.gguf"), std::string::npos) << what << ": " << model.status();
  };
  for (const GgufLayout::Scalar& s : layout.scalars) {
    if (s.type == 6 || s.type == 12) {  // float32 / float64
      for (double v : {0.0, -1.0, 1e30, std::nan(""), std::numeric_limits<double>::infinity()}) {
        if (s.type == 6) {
          const float f = static_cast<float>(v);
          try_load(s.at, &f, 4, s.key);
        } else {
          try_load(s.at, &v, 8, s.key);
        }
      }
      continue;
    }
    for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{3}, uint64_t{0x7FFFFFFF}, ~uint64_t{0}}) {
      try_load(s.at, &v, s.bytes, s.key);  // little-endian: the low bytes of v
    }
  }
  for (size_t i : {size_t{0}, size_t{1}, layout.infos.size() / 2, layout.infos.size() - 1}) {
    const GgufLayout::Info& info = layout.infos[i];
    for (uint32_t type : {2u, 8u, 12u, 14u, 23u, 39u, 99u, 0x80000000u}) try_load(info.type_at, &type, 4, "type");
    for (uint64_t dim : {uint64_t{0}, uint64_t{255}, uint64_t{1} << 33, uint64_t{1} << 63}) {
      try_load(info.dims_at, &dim, 8, "dim");
    }
    for (uint64_t offset : {uint64_t{1}, uint64_t{1} << 40, uint64_t{good.size()}}) {
      try_load(info.offset_at, &offset, 8, "offset");
    }
  }
  EXPECT_GT(failed, 50) << loaded << " loaded";
  std::remove(path.c_str());
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
