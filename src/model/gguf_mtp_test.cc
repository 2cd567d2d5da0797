// The multi-token-prediction head in GGUF, as llama.cpp stores it (its NextN block):
// `pagellm convert` writes a hybrid checkpoint's mtp.* tensors as block num_hidden_layers
// (blk.N.nextn.{eh_proj,enorm,hnorm,shared_head_norm} + the usual layer names, norms + 1,
// block_count + 1, {arch}.nextn_predict_layers), LoadModel with load_mtp reads them back into
// ModelWeights::mtp in the checkpoint's own convention, and a file without the block is
// NotFound for MTP while it loads as before without it.
#include <cmath>
#include <cstring>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "gguf/gguf_file.h"
#include "gguf/gguf_names.h"
#include "gguf/gguf_quants.h"
#include "model/convert.h"
#include "model/gguf_test_util.h"
#include "model/gguf_convert.h"
#include "model/model_loader.h"
#include "model/safetensors.h"
#include "tensor/kquant_blocks.h"

namespace pagellm {
namespace {

std::string TinyDir(const std::string& preset) {
  return testing_util::TinyCheckpointDir(preset, "gguf_mtp_test", 11);
}

// The GGUF of `preset` (converted once per test binary run), with or without the MTP head.
std::string Convert(const std::string& preset, GgmlType outtype, bool keep_mtp = true,
                    std::optional<GgufFileType> quantize = std::nullopt) {
  GgufConvertOptions options;
  options.model_dir = TinyDir(preset);
  options.outfile = fmt::format("{}/gguf_mtp_test_{}_{}{}{}.gguf", ::testing::TempDir(), preset, GgmlTypeName(outtype),
                                quantize ? fmt::format("_{}", GgufFileTypeName(*quantize)) : "",
                                keep_mtp ? "" : "_no_mtp");
  options.outtype = outtype;
  options.quantize = quantize;
  options.keep_mtp = keep_mtp;
  auto report = ConvertToGguf(options);
  EXPECT_TRUE(report.ok()) << report.status();
  return options.outfile;
}

StatusOr<LoadedModel> Load(const std::string& path, const std::string& dtype, bool load_mtp,
                           const std::string& load_format = "auto") {
  LoadOptions options;
  options.model_path = path;
  options.dtype = dtype;
  options.load_mtp = load_mtp;
  options.load_format = load_format;
  return LoadModel(options);
}

// Every view of the MTP head by a readable name.
std::vector<std::pair<std::string, TensorView>> MtpViews(const MtpWeights& m) {
  std::vector<std::pair<std::string, TensorView>> out = {{"fc", m.fc},
                                                         {"pre_fc_norm_embedding", m.pre_fc_norm_embedding},
                                                         {"pre_fc_norm_hidden", m.pre_fc_norm_hidden},
                                                         {"norm", m.norm}};
  testing_util::AppendLayerViews(m.layers, &out);
  return out;
}

TEST(GgufMtpNamesTest, NextnSuffixesAreLlamaCpps) {
  // gguf-py MODEL_TENSOR.NEXTN_* as _QwenMtpMixin's remapper fills them.
  EXPECT_EQ(GgufNextnSuffix("fc.weight").value(), "nextn.eh_proj.weight");
  EXPECT_EQ(GgufNextnSuffix("pre_fc_norm_embedding.weight").value(), "nextn.enorm.weight");
  EXPECT_EQ(GgufNextnSuffix("pre_fc_norm_hidden.weight").value(), "nextn.hnorm.weight");
  EXPECT_EQ(GgufNextnSuffix("norm.weight").value(), "nextn.shared_head_norm.weight");
  EXPECT_EQ(GgufNextnSuffix("layers.0.self_attn.q_proj.weight").status().code(), StatusCode::kNotFound);
}

// The block as llama.cpp's converter writes it, element by element from the safetensors source.
TEST(GgufMtpConvertTest, WritesTheNextnBlockAsLlamaCppsConverter) {
  auto hf = SafetensorsCheckpoint::Open(TinyDir("qwen3.5-tiny")).value();
  auto gguf = GgufFile::Open(Convert("qwen3.5-tiny", GgmlType::kF32)).value();
  EXPECT_EQ(gguf->GetInt("qwen35.block_count").value(), 5);
  EXPECT_EQ(gguf->GetInt("qwen35.nextn_predict_layers").value(), 1);
  // Where _QwenMtpMixin.set_gguf_parameters puts it: between the parent's keys and the ssm.* ones.
  std::vector<std::string> keys;
  for (const auto& [key, value] : gguf->metadata()) keys.push_back(key);
  auto at = [&](const std::string& key) { return std::find(keys.begin(), keys.end(), key) - keys.begin(); };
  EXPECT_LT(at("general.file_type"), at("qwen35.nextn_predict_layers"));
  EXPECT_EQ(at("qwen35.nextn_predict_layers") + 1, at("qwen35.ssm.conv_kernel"));
  auto f32 = [&](const std::string& name, int64_t i) {
    const GgufTensorInfo* t = gguf->FindTensor(name);
    EXPECT_NE(t, nullptr) << name;
    if (t == nullptr) return NAN;
    EXPECT_EQ(t->type, GgmlType::kF32) << name;
    return reinterpret_cast<const float*>(t->data.data())[i];
  };
  auto src = [&](const std::string& name, int64_t i) { return ReadElementAsFloat(*hf->Find(name), i); };
  const int64_t H = 64;
  // eh_proj is mtp.fc as it is: ne {2H, H}, input columns [embedding | hidden] as llama.cpp concatenates.
  EXPECT_EQ(gguf->FindTensor("blk.4.nextn.eh_proj.weight")->ne, (std::vector<int64_t>{2 * H, H}));
  for (int64_t i = 0; i < 2 * H * H; i += 37) EXPECT_EQ(f32("blk.4.nextn.eh_proj.weight", i), src("mtp.fc.weight", i));
  // Every norm of the head is zero-centred and gets + 1, as the main layers' (Qwen3NextModel).
  const std::pair<const char*, const char*> norms[] = {
      {"blk.4.nextn.enorm.weight", "mtp.pre_fc_norm_embedding.weight"},
      {"blk.4.nextn.hnorm.weight", "mtp.pre_fc_norm_hidden.weight"},
      {"blk.4.nextn.shared_head_norm.weight", "mtp.norm.weight"},
      {"blk.4.attn_norm.weight", "mtp.layers.0.input_layernorm.weight"},
      {"blk.4.post_attention_norm.weight", "mtp.layers.0.post_attention_layernorm.weight"},
      {"blk.4.attn_q_norm.weight", "mtp.layers.0.self_attn.q_norm.weight"},
      {"blk.4.attn_k_norm.weight", "mtp.layers.0.self_attn.k_norm.weight"}};
  for (const auto& [g, h] : norms) {
    for (int64_t i = 0; i < 64; ++i) EXPECT_EQ(f32(g, i), src(h, i) + 1.0f) << g << " " << i;
  }
  // The layer: gated full attention (q_proj [2 nh hd, H]) and the dense MLP, under the usual names.
  EXPECT_EQ(gguf->FindTensor("blk.4.attn_q.weight")->ne, (std::vector<int64_t>{H, 2 * 4 * 64}));
  for (int64_t i = 0; i < 512 * H; i += 101) {
    EXPECT_EQ(f32("blk.4.attn_q.weight", i), src("mtp.layers.0.self_attn.q_proj.weight", i));
  }
  for (const char* name : {"blk.4.attn_k.weight", "blk.4.attn_v.weight", "blk.4.attn_output.weight",
                           "blk.4.ffn_gate.weight", "blk.4.ffn_up.weight", "blk.4.ffn_down.weight"}) {
    EXPECT_NE(gguf->FindTensor(name), nullptr) << name;
  }
  EXPECT_EQ(gguf->FindTensor("blk.4.ssm_a"), nullptr);
  // --no-mtp: neither the key nor the block; with it, the block's 15 tensors (the layer's 11,
  // eh_proj and three norms) come after every other, which are the same.
  auto plain = GgufFile::Open(Convert("qwen3.5-tiny", GgmlType::kF32, /*keep_mtp=*/false)).value();
  EXPECT_EQ(plain->GetInt("qwen35.block_count").value(), 4);
  EXPECT_EQ(plain->Find("qwen35.nextn_predict_layers"), nullptr);
  const auto &with = gguf->tensors(), &without = plain->tensors();
  ASSERT_EQ(with.size(), without.size() + 15);
  for (size_t i = 0; i < with.size(); ++i) {
    EXPECT_EQ(with[i].name.starts_with("blk.4."), i >= without.size()) << with[i].name;
    if (i < without.size()) {
      EXPECT_EQ(with[i].name, without[i].name);
    }
  }
}

// Qwen3-Next's (MoE) head: the layer's experts stacked as the main layers', its router,
// shared expert and gate under their names.
TEST(GgufMtpConvertTest, Qwen3NextHeadIsAnMoeBlock) {
  auto hf = SafetensorsCheckpoint::Open(TinyDir("qwen3-next-tiny")).value();
  auto gguf = GgufFile::Open(Convert("qwen3-next-tiny", GgmlType::kF32)).value();
  EXPECT_EQ(gguf->GetInt("qwen3next.block_count").value(), 5);
  EXPECT_EQ(gguf->GetInt("qwen3next.nextn_predict_layers").value(), 1);
  const int64_t E = 8, ie = 32, H = 64;
  ASSERT_NE(gguf->FindTensor("blk.4.ffn_up_exps.weight"), nullptr);
  EXPECT_EQ(gguf->FindTensor("blk.4.ffn_up_exps.weight")->ne, (std::vector<int64_t>{H, ie, E}));
  const float* up = reinterpret_cast<const float*>(gguf->FindTensor("blk.4.ffn_up_exps.weight")->data.data());
  for (int64_t e = 0; e < E; ++e) {
    const TensorView* v = hf->Find(fmt::format("mtp.layers.0.mlp.experts.{}.up_proj.weight", e));
    ASSERT_NE(v, nullptr);
    for (int64_t i = 0; i < ie * H; i += 13) EXPECT_EQ(up[e * ie * H + i], ReadElementAsFloat(*v, i)) << e;
  }
  for (const char* name : {"blk.4.ffn_gate_inp.weight", "blk.4.ffn_gate_exps.weight", "blk.4.ffn_down_exps.weight",
                           "blk.4.ffn_gate_shexp.weight", "blk.4.ffn_up_shexp.weight", "blk.4.ffn_down_shexp.weight",
                           "blk.4.ffn_gate_inp_shexp.weight", "blk.4.attn_q.weight", "blk.4.nextn.eh_proj.weight",
                           "blk.4.nextn.enorm.weight", "blk.4.nextn.hnorm.weight",
                           "blk.4.nextn.shared_head_norm.weight"}) {
    EXPECT_NE(gguf->FindTensor(name), nullptr) << name;
  }
}

// HF -> GGUF (F32, BF16) -> LoadModel with load_mtp gives the checkpoint's MTP head exactly
// (norms back around 0), and the main model as without it.
class GgufMtpRoundTripTest : public ::testing::TestWithParam<const char*> {};

TEST_P(GgufMtpRoundTripTest, GivesTheCheckpointHead) {
  const char* preset = GetParam();
  StatusOr<LoadedModel> hf = Load(TinyDir(preset), "float32", /*load_mtp=*/true);
  ASSERT_TRUE(hf.ok()) << hf.status();
  ASSERT_TRUE(hf->weights.mtp.present());
  for (GgmlType type : {GgmlType::kF32, GgmlType::kBF16}) {
    const std::string tag = fmt::format("{} {}", preset, GgmlTypeName(type));
    const std::string path = Convert(preset, type);
    StatusOr<LoadedModel> gg = Load(path, "float32", /*load_mtp=*/true);
    ASSERT_TRUE(gg.ok()) << tag << ": " << gg.status();
    EXPECT_EQ(gg->config.mtp_num_hidden_layers, 1) << tag;
    EXPECT_EQ(gg->config.num_hidden_layers, hf->config.num_hidden_layers) << tag;
    ASSERT_TRUE(gg->weights.mtp.present()) << tag;
    auto va = MtpViews(hf->weights.mtp), vb = MtpViews(gg->weights.mtp);
    ASSERT_EQ(va.size(), vb.size()) << tag;
    int compared = 0;
    for (size_t i = 0; i < va.size(); ++i) {
      const TensorView &x = va[i].second, &y = vb[i].second;
      ASSERT_EQ(x.empty(), y.empty()) << tag << " " << va[i].first;
      if (x.empty()) continue;
      ASSERT_EQ(x.shape, y.shape) << tag << " " << va[i].first;
      ASSERT_EQ(y.dtype, DType::kF32) << tag << " " << va[i].first;
      // The checkpoint is bf16, so BF16 matrices and F32 norms hold it exactly.
      ASSERT_EQ(std::memcmp(x.data, y.data, static_cast<size_t>(x.numel()) * sizeof(float)), 0)
          << tag << " " << va[i].first;
      ++compared;
    }
    EXPECT_GE(compared, 4 + 11) << tag;  // fc, three norms, attention and norms of the layer, its FFN

    StatusOr<LoadedModel> plain = Load(path, "float32", /*load_mtp=*/false);
    ASSERT_TRUE(plain.ok()) << tag << ": " << plain.status();
    EXPECT_FALSE(plain->weights.mtp.present()) << tag;
    EXPECT_EQ(plain->config.mtp_num_hidden_layers, 1) << tag;  // the file has the head; it is just not loaded
    EXPECT_EQ(plain->weights.layers.size(), gg->weights.layers.size()) << tag;
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, GgufMtpRoundTripTest,
                         ::testing::Values("qwen3.5-tiny", "qwen3.5-moe-tiny", "qwen3-next-tiny"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& ch : name) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return name;
                         });

// A GGUF without the block (converted --no-mtp, or by an older converter) loads as before,
// with no MTP layer in its config, and asking for the head is NotFound naming the method.
TEST(GgufMtpLoadTest, FileWithoutTheBlockIsNotFoundForMtp) {
  const std::string path = Convert("qwen3-next-tiny", GgmlType::kBF16, /*keep_mtp=*/false);
  StatusOr<LoadedModel> plain = Load(path, "auto", /*load_mtp=*/false);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->config.mtp_num_hidden_layers, 0);  // not Qwen3-Next's implied 1
  EXPECT_EQ(plain->config.num_hidden_layers, 4);
  for (const char* format : {"auto", "dummy"}) {
    StatusOr<LoadedModel> mtp = Load(path, "auto", /*load_mtp=*/true, format);
    ASSERT_FALSE(mtp.ok()) << format;
    EXPECT_EQ(mtp.status().code(), StatusCode::kNotFound) << format;
    EXPECT_NE(mtp.status().message().find("--speculative-config method mtp"), std::string::npos) << mtp.status();
  }
  // --load-format dummy on a file with the head: random MTP weights of its shapes.
  StatusOr<LoadedModel> dummy = Load(Convert("qwen3-next-tiny", GgmlType::kBF16), "auto", /*load_mtp=*/true, "dummy");
  ASSERT_TRUE(dummy.ok()) << dummy.status();
  ASSERT_TRUE(dummy->weights.mtp.present());
  EXPECT_EQ(dummy->weights.mtp.fc.shape, (std::vector<int64_t>{64, 128}));
}

// Q4_K_M (llama-quantize's recipe on the F16 file; tests/gguf/compare_quantized_files.py
// checks the bytes against llama-quantize's): the head's matrices stay quantized under --dtype
// auto and dequantize to what --dtype float32 loads, bit for bit.
TEST(GgufMtpLoadTest, QuantizedHeadStaysQuantized) {
  const std::string path = Convert("qwen3.5-tiny", GgmlType::kF16, true, GgufFileType::kQ4_K_M);
  auto gguf = GgufFile::Open(path).value();
  // The block counts in the recipe's layer rules as llama.cpp's (block_count 5): its attn_v and
  // ffn_down are layer 4 of 5 (use_more_bits: Q6_K, rows of 64 / 192 -> Q8_0); eh_proj takes
  // the default Q4_K (rows of 128 -> Q5_0); o_proj's rows of 256 keep Q4_K.
  EXPECT_EQ(gguf->FindTensor("blk.4.nextn.eh_proj.weight")->type, GgmlType::kQ5_0);
  EXPECT_EQ(gguf->FindTensor("blk.4.attn_v.weight")->type, GgmlType::kQ8_0);
  EXPECT_EQ(gguf->FindTensor("blk.4.ffn_down.weight")->type, GgmlType::kQ8_0);
  EXPECT_EQ(gguf->FindTensor("blk.4.attn_output.weight")->type, GgmlType::kQ4_K);
  EXPECT_EQ(gguf->FindTensor("blk.4.nextn.enorm.weight")->type, GgmlType::kF32);
  StatusOr<LoadedModel> quant = Load(path, "auto", true), f32 = Load(path, "float32", true);
  ASSERT_TRUE(quant.ok()) << quant.status();
  ASSERT_TRUE(f32.ok()) << f32.status();
  auto vq = MtpViews(quant->weights.mtp), vf = MtpViews(f32->weights.mtp);
  ASSERT_EQ(vq.size(), vf.size());
  int num_quantized = 0;
  for (size_t i = 0; i < vq.size(); ++i) {
    const TensorView &q = vq[i].second, &f = vf[i].second;
    ASSERT_EQ(q.shape, f.shape) << vq[i].first;
    if (q.empty() || (!IsPackedQuant(q.dtype) && q.dtype != DType::kQ8_0)) continue;
    ++num_quantized;
    const int64_t cols = q.dim(1);
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = 0; r < q.dim(0); ++r) {
      const std::byte* in = static_cast<const std::byte*>(q.data) + DTypeBytes(q.dtype, r * cols);
      if (q.dtype == DType::kQ8_0) {
        ASSERT_TRUE(Dequantize(GgmlType::kQ8_0, {in, DTypeBytes(q.dtype, cols)}, cols, row.data()).ok());
      } else {
        DequantizeRowKQuant(q.dtype, in, cols, row.data());
      }
      ASSERT_EQ(std::memcmp(row.data(), f.as<float>() + r * cols, static_cast<size_t>(cols) * sizeof(float)), 0)
          << vq[i].first << " row " << r;
    }
  }
  EXPECT_EQ(num_quantized, 8);  // fc, q k v o, gate up down
}

}  // namespace
}  // namespace pagellm
