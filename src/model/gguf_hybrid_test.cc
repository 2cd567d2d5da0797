// GGUF for the hybrid models (Qwen3.5, Qwen3.5-MoE, Qwen3-Next): the tensors `pagellm
// convert` writes are checked element by element against the llama.cpp converter's
// transformations recomputed here from the safetensors source (norms + 1, -exp(A_log),
// tiled value heads, qkvz split, expert stacking), the metadata against the keys llama.cpp
// reads, and HF -> GGUF -> pagellm weights against the checkpoint's own.
#include <cmath>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "gguf/gguf_file.h"
#include "model/convert.h"
#include "model/gguf_convert.h"
#include "model/gguf_hybrid_plan.h"
#include "model/gguf_test_util.h"
#include "model/model_loader.h"
#include "model/safetensors.h"
#include "tensor/kquant_blocks.h"

namespace pagellm {
namespace {

namespace fs = std::filesystem;

std::string TinyDir(const std::string& preset) {
  return testing_util::TinyCheckpointDir(preset, "gguf_hybrid_test", 5);
}

std::string Convert(const std::string& preset, GgmlType outtype) {
  GgufConvertOptions options;
  options.model_dir = TinyDir(preset);
  options.outfile = fmt::format("{}/hybrid_{}_{}.gguf", ::testing::TempDir(), preset, GgmlTypeName(outtype));
  options.outtype = outtype;
  if (!fs::exists(options.outfile)) {
    auto report = ConvertToGguf(options);
    EXPECT_TRUE(report.ok()) << report.status();
  }
  return options.outfile;
}

// A converted (F32) GGUF next to its safetensors source, read element-wise.
struct Pair {
  std::unique_ptr<SafetensorsCheckpoint> hf;
  std::unique_ptr<GgufFile> gguf;

  Pair(const std::string& preset) {
    hf = SafetensorsCheckpoint::Open(TinyDir(preset)).value();
    gguf = GgufFile::Open(Convert(preset, GgmlType::kF32)).value();
  }
  float Hf(const std::string& name, int64_t i) const {
    const TensorView* v = hf->Find(name);
    EXPECT_NE(v, nullptr) << name;
    return v == nullptr ? NAN : ReadElementAsFloat(*v, i);
  }
  float G(const std::string& name, int64_t i) const {
    const GgufTensorInfo* t = gguf->FindTensor(name);
    EXPECT_NE(t, nullptr) << name;
    EXPECT_EQ(t->type, GgmlType::kF32) << name;
    return reinterpret_cast<const float*>(t->data.data())[i];
  }
  std::vector<int64_t> Ne(const std::string& name) const { return gguf->FindTensor(name)->ne; }
};

TEST(GgufHybridPlanTest, TiledOrderIsLlamaCppsValueHeadReorder) {
  // Tiled head j' = jj * nk + g holds grouped head g * r + jj (r = nv / nk).
  EXPECT_EQ(TiledValueRows(2, 4, 1), (std::vector<int64_t>{0, 2, 1, 3}));
  EXPECT_EQ(TiledValueRows(2, 6, 1), (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(TiledValueRows(2, 4, 2), (std::vector<int64_t>{0, 1, 4, 5, 2, 3, 6, 7}));
  EXPECT_EQ(TiledValueRows(3, 3, 1), (std::vector<int64_t>{0, 1, 2}));
}

TEST(GgufHybridConvertTest, Qwen35MetadataIsWhatLlamaCppReads) {
  auto gguf = GgufFile::Open(Convert("qwen3.5-tiny", GgmlType::kF32)).value();
  EXPECT_EQ(gguf->GetString("general.architecture").value(), "qwen35");
  const std::pair<const char*, int64_t> keys[] = {
      {"qwen35.block_count", 5},          {"qwen35.embedding_length", 64},     {"qwen35.feed_forward_length", 192},
      {"qwen35.attention.head_count", 4}, {"qwen35.attention.head_count_kv", 2}, {"qwen35.attention.key_length", 64},
      {"qwen35.ssm.conv_kernel", 4},      {"qwen35.ssm.state_size", 32},       {"qwen35.ssm.group_count", 2},
      {"qwen35.ssm.time_step_rank", 4},   {"qwen35.ssm.inner_size", 128},      {"qwen35.full_attention_interval", 4},
      {"qwen35.rope.dimension_count", 16}};
  for (const auto& [key, value] : keys) EXPECT_EQ(gguf->GetInt(key).value(), value) << key;
  EXPECT_EQ(gguf->GetIntArray("qwen35.rope.dimension_sections").value(), (std::vector<int64_t>{11, 11, 10, 0}));
  // The dummy ships the MTP head: 4 decoder layers + the NextN block (model/gguf_mtp_test.cc).
  EXPECT_EQ(gguf->GetInt("qwen35.nextn_predict_layers").value(), 1);
  auto moe = GgufFile::Open(Convert("qwen3.5-moe-tiny", GgmlType::kQ8_0)).value();
  EXPECT_EQ(moe->GetInt("qwen35moe.expert_count").value(), 8);
  EXPECT_EQ(moe->GetInt("qwen35moe.expert_used_count").value(), 2);
  EXPECT_EQ(moe->GetInt("qwen35moe.expert_feed_forward_length").value(), 32);
  EXPECT_EQ(moe->GetInt("qwen35moe.expert_shared_feed_forward_length").value(), 64);
  EXPECT_EQ(moe->Find("qwen35moe.feed_forward_length"), nullptr);
  // Types: the converter's F32 list (norms, ssm_a, ssm_dt, router, shared gate, conv1d).
  for (const char* name : {"blk.0.ssm_conv1d.weight", "blk.0.ssm_a", "blk.0.ssm_dt.bias", "blk.0.ssm_norm.weight",
                           "blk.0.ffn_gate_inp.weight", "blk.0.ffn_gate_inp_shexp.weight",
                           "blk.0.post_attention_norm.weight", "blk.3.attn_q_norm.weight"}) {
    ASSERT_NE(moe->FindTensor(name), nullptr) << name;
    EXPECT_EQ(moe->FindTensor(name)->type, GgmlType::kF32) << name;
  }
  for (const char* name : {"blk.0.attn_qkv.weight", "blk.0.ssm_out.weight", "blk.0.ffn_gate_exps.weight",
                           "blk.3.attn_q.weight", "output.weight"}) {
    EXPECT_EQ(moe->FindTensor(name)->type, GgmlType::kQ8_0) << name;
  }
}

TEST(GgufHybridConvertTest, Qwen35TensorsAreTheConvertersTransformations) {
  Pair p("qwen3.5-tiny");
  const std::string L0 = "model.language_model.layers.0.", L3 = "model.language_model.layers.3.";
  const int64_t nk = 2, r = 2, dv = 32, H = 64, key_dim = 64, nv = 4;
  auto tiled = [&](int64_t j) { return (j % nk) * r + j / nk; };  // grouped head held by tiled head j
  for (int64_t i = 0; i < H; ++i) {
    EXPECT_EQ(p.G("blk.0.attn_norm.weight", i), p.Hf(L0 + "input_layernorm.weight", i) + 1.0f);
    EXPECT_EQ(p.G("output_norm.weight", i), p.Hf("model.language_model.norm.weight", i) + 1.0f);
  }
  for (int64_t i = 0; i < 64; ++i) EXPECT_EQ(p.G("blk.3.attn_k_norm.weight", i), p.Hf(L3 + "self_attn.k_norm.weight", i) + 1.0f);
  for (int64_t i = 0; i < dv; ++i) EXPECT_EQ(p.G("blk.0.ssm_norm.weight", i), p.Hf(L0 + "linear_attn.norm.weight", i));
  for (int64_t j = 0; j < nv; ++j) {
    EXPECT_EQ(p.G("blk.0.ssm_a", j), -std::exp(p.Hf(L0 + "linear_attn.A_log", tiled(j)))) << j;
    EXPECT_EQ(p.G("blk.0.ssm_dt.bias", j), p.Hf(L0 + "linear_attn.dt_bias", tiled(j))) << j;
    for (int64_t c = 0; c < H; ++c) {
      EXPECT_EQ(p.G("blk.0.ssm_beta.weight", j * H + c), p.Hf(L0 + "linear_attn.in_proj_b.weight", tiled(j) * H + c));
      EXPECT_EQ(p.G("blk.0.ssm_alpha.weight", j * H + c), p.Hf(L0 + "linear_attn.in_proj_a.weight", tiled(j) * H + c));
    }
  }
  const int64_t conv_dim = 2 * key_dim + nv * dv;
  EXPECT_EQ(p.Ne("blk.0.ssm_conv1d.weight"), (std::vector<int64_t>{4, conv_dim}));
  for (int64_t row = 0; row < conv_dim; ++row) {
    const int64_t src = row < 2 * key_dim ? row : 2 * key_dim + tiled((row - 2 * key_dim) / dv) * dv + row % dv;
    for (int64_t c = 0; c < H; c += 7) {
      EXPECT_EQ(p.G("blk.0.attn_qkv.weight", row * H + c), p.Hf(L0 + "linear_attn.in_proj_qkv.weight", src * H + c));
    }
    for (int64_t k = 0; k < 4; ++k) {
      EXPECT_EQ(p.G("blk.0.ssm_conv1d.weight", row * 4 + k), p.Hf(L0 + "linear_attn.conv1d.weight", src * 4 + k));
    }
  }
  for (int64_t row = 0; row < nv * dv; ++row) {
    const int64_t src = tiled(row / dv) * dv + row % dv;
    EXPECT_EQ(p.G("blk.0.attn_gate.weight", row * H + 5), p.Hf(L0 + "linear_attn.in_proj_z.weight", src * H + 5));
    for (int64_t h = 0; h < H; h += 9) {  // out_proj: input columns reordered
      EXPECT_EQ(p.G("blk.0.ssm_out.weight", h * nv * dv + row), p.Hf(L0 + "linear_attn.out_proj.weight", h * nv * dv + src));
    }
  }
}

TEST(GgufHybridConvertTest, ExpertsAreStackedAndQwen3NextQkvzIsSplit) {
  Pair moe("qwen3.5-moe-tiny");
  const int64_t E = 8, ie = 32, H = 64;
  const std::string M = "model.language_model.layers.1.mlp.experts.";
  EXPECT_EQ(moe.Ne("blk.1.ffn_gate_exps.weight"), (std::vector<int64_t>{H, ie, E}));
  for (int64_t e = 0; e < E; ++e) {
    for (int64_t rc = 0; rc < ie * H; rc += 13) {
      EXPECT_EQ(moe.G("blk.1.ffn_gate_exps.weight", e * ie * H + rc), moe.Hf(M + "gate_up_proj", e * 2 * ie * H + rc));
      EXPECT_EQ(moe.G("blk.1.ffn_up_exps.weight", e * ie * H + rc),
                moe.Hf(M + "gate_up_proj", (e * 2 * ie + ie) * H + rc));
      EXPECT_EQ(moe.G("blk.1.ffn_down_exps.weight", e * ie * H + rc), moe.Hf(M + "down_proj", e * ie * H + rc));
    }
  }
  Pair next("qwen3-next-tiny");
  const std::string L = "model.layers.0.";
  for (int64_t e = 0; e < E; e += 3) {
    for (int64_t rc = 0; rc < ie * H; rc += 11) {
      EXPECT_EQ(next.G("blk.0.ffn_up_exps.weight", e * ie * H + rc),
                next.Hf(fmt::format("{}mlp.experts.{}.up_proj.weight", L, e), rc));
    }
  }
  // in_proj_qkvz rows per key group g: [q_g (dk) | k_g (dk) | v_g (r*dv) | z_g (r*dv)].
  const int64_t nk = 2, dk = 32, rdv = 64, group = 2 * dk + 2 * rdv;
  for (int64_t g = 0; g < nk; ++g) {
    for (int64_t i = 0; i < rdv; ++i) {
      const std::string qkvz = L + "linear_attn.in_proj_qkvz.weight";
      const int64_t c = (g + i) % H;
      if (i < dk) {
        EXPECT_EQ(next.G("blk.0.attn_qkv.weight", (g * dk + i) * H + c), next.Hf(qkvz, (g * group + i) * H + c));
        EXPECT_EQ(next.G("blk.0.attn_qkv.weight", (nk * dk + g * dk + i) * H + c),
                  next.Hf(qkvz, (g * group + dk + i) * H + c));
      }
      EXPECT_EQ(next.G("blk.0.attn_qkv.weight", (2 * nk * dk + g * rdv + i) * H + c),
                next.Hf(qkvz, (g * group + 2 * dk + i) * H + c));
      EXPECT_EQ(next.G("blk.0.attn_gate.weight", (g * rdv + i) * H + c),
                next.Hf(qkvz, (g * group + 2 * dk + rdv + i) * H + c));
    }
  }
  for (int64_t j = 0; j < 4; ++j) {  // Qwen3-Next keeps grouped value heads
    EXPECT_EQ(next.G("blk.0.ssm_a", j), -std::exp(next.Hf(L + "linear_attn.A_log", j)));
  }
  EXPECT_EQ(next.Ne("blk.0.ssm_ba.weight"), (std::vector<int64_t>{H, 8}));
}

// Every weight view of a loaded model, by a readable name.
std::vector<std::pair<std::string, TensorView>> AllViews(const ModelWeights& w) {
  std::vector<std::pair<std::string, TensorView>> out = {
      {"embed", w.embed_tokens}, {"norm", w.norm}, {"lm_head", w.lm_head}};
  testing_util::AppendLayerViews(w.layers, &out);
  return out;
}

LoadedModel Load(const std::string& path, const std::string& dtype) {
  LoadOptions options;
  options.model_path = path;
  options.dtype = dtype;
  auto model = LoadModel(options);
  EXPECT_TRUE(model.ok()) << model.status();
  return std::move(model).value();
}

// HF -> GGUF (F32, BF16, Q8_0) -> pagellm gives the checkpoint's weights: exactly for float
// types (A_log = log(-ssm_a) within 1e-6 relative), within a Q8_0 step (amax/127 of the
// 32-block, blocks moved whole by the column reorder) for Q8_0; the config matches.
class GgufHybridRoundTripTest : public ::testing::TestWithParam<const char*> {};

TEST_P(GgufHybridRoundTripTest, GivesTheCheckpointWeights) {
  {
    const char* preset = GetParam();
    LoadedModel hf = Load(TinyDir(preset), "float32");
    for (GgmlType type : {GgmlType::kF32, GgmlType::kBF16, GgmlType::kQ8_0}) {
      const std::string tag = fmt::format("{} {}", preset, GgmlTypeName(type));
      LoadedModel gg = Load(Convert(preset, type), "float32");
      const ModelConfig &a = hf.config, &b = gg.config;
      EXPECT_EQ(a.arch, b.arch) << tag;
      EXPECT_EQ(a.layer_types, b.layer_types) << tag;
      EXPECT_EQ(std::tie(a.linear_num_key_heads, a.linear_num_value_heads, a.linear_key_head_dim,
                         a.linear_value_head_dim, a.linear_conv_kernel_dim, a.num_experts, a.num_experts_per_tok,
                         a.moe_intermediate_size, a.shared_expert_intermediate_size, a.intermediate_size,
                         a.tie_word_embeddings, a.grouped_gdn_projections),
                std::tie(b.linear_num_key_heads, b.linear_num_value_heads, b.linear_key_head_dim,
                         b.linear_value_head_dim, b.linear_conv_kernel_dim, b.num_experts, b.num_experts_per_tok,
                         b.moe_intermediate_size, b.shared_expert_intermediate_size, b.intermediate_size,
                         b.tie_word_embeddings, b.grouped_gdn_projections))
          << tag;
      EXPECT_FALSE(b.fused_experts) << tag;  // GGUF experts bind one linear each (gguf_config.cc)
      EXPECT_DOUBLE_EQ(a.partial_rotary_factor, b.partial_rotary_factor) << tag;
      auto va = AllViews(hf.weights), vb = AllViews(gg.weights);
      ASSERT_EQ(va.size(), vb.size()) << tag;
      for (size_t i = 0; i < va.size(); ++i) {
        const TensorView &x = va[i].second, &y = vb[i].second;
        ASSERT_EQ(x.shape, y.shape) << tag << " " << va[i].first;
        ASSERT_EQ(x.empty(), y.empty()) << tag << " " << va[i].first;
        if (x.empty()) continue;
        ASSERT_EQ(y.dtype, DType::kF32) << tag << " " << va[i].first;
        const bool q8 = type == GgmlType::kQ8_0 && x.rank() >= 2 && x.shape.back() % 32 == 0;
        for (int64_t blk = 0; blk < x.numel(); blk += 32) {
          float amax = 0;
          for (int64_t j = blk; j < std::min(blk + 32, x.numel()); ++j) amax = std::max(amax, std::fabs(x.as<float>()[j]));
          for (int64_t j = blk; j < std::min(blk + 32, x.numel()); ++j) {
            const float u = x.as<float>()[j], v = y.as<float>()[j];
            const bool a_log = va[i].first.ends_with("A_log");  // log(-(-exp(x))) rounds
            const float bound = q8 ? amax / 127.0f * 1.01f : a_log ? 1e-6f * (std::fabs(u) + 1.0f) : 0.0f;
            ASSERT_LE(std::fabs(u - v), bound) << tag << " " << va[i].first << " at " << j;
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, GgufHybridRoundTripTest,
                         ::testing::Values("qwen3.5-tiny", "qwen3.5-moe-tiny", "qwen3-next-tiny", "qwen3-moe-tiny"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& ch : name) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return name;
                         });

// k-quant hybrid and Qwen3-MoE GGUFs (Q4_K_M of presets whose rows are 256-multiples) bind their matrices
// and expert slices as the file's k-quant blocks; each one, dequantized and put back in
// logical column order (TensorView::column_order: Qwen3.5's GDN out_proj keeps the file's
// tiled value-head order), equals what --dtype float32 loads, bit for bit.
class GgufHybridKQuantTest : public ::testing::TestWithParam<const char*> {};

TEST_P(GgufHybridKQuantTest, MatricesStayQuantizedAndEqualTheDequantizedLoad) {
  const char* preset = GetParam();
  GgufConvertOptions options;
  options.model_dir = TinyDir(preset);
  options.outfile = fmt::format("{}/hybrid_{}_q4_k_m.gguf", ::testing::TempDir(), preset);
  options.quantize = GgufFileType::kQ4_K_M;
  ASSERT_TRUE(ConvertToGguf(options).ok());
  LoadedModel quant = Load(options.outfile, "auto"), f32 = Load(options.outfile, "float32");
  auto vq = AllViews(quant.weights), vf = AllViews(f32.weights);
  ASSERT_EQ(vq.size(), vf.size());
  int num_quantized = 0, num_reordered = 0, num_experts = 0;
  for (size_t i = 0; i < vq.size(); ++i) {
    const TensorView &q = vq[i].second, &f = vf[i].second;
    ASSERT_EQ(q.shape, f.shape) << vq[i].first;
    if (q.empty() || !IsPackedQuant(q.dtype)) continue;
    ++num_quantized;
    num_experts += vq[i].first.find("expert") != std::string::npos ? 1 : 0;
    ASSERT_EQ(q.rank(), 2) << vq[i].first;
    const int64_t rows = q.dim(0), cols = q.dim(1);
    std::vector<float> row(static_cast<size_t>(cols)), logical(static_cast<size_t>(cols));
    if (!q.column_order.empty()) ++num_reordered;
    for (int64_t r = 0; r < rows; ++r) {
      DequantizeRowKQuant(q.dtype, static_cast<const std::byte*>(q.data) + DTypeBytes(q.dtype, r * cols), cols,
                          row.data());
      for (int64_t j = 0; j < cols; ++j) {
        logical[static_cast<size_t>(q.column_order.empty() ? j : q.column_order[static_cast<size_t>(j)])] = row[static_cast<size_t>(j)];
      }
      ASSERT_EQ(std::memcmp(logical.data(), f.as<float>() + r * cols, static_cast<size_t>(cols) * sizeof(float)), 0)
          << preset << " " << vq[i].first << " row " << r;
    }
  }
  EXPECT_GT(num_quantized, 10) << preset;
  // The GDN out_proj of every linear-attention layer; Qwen3-MoE has none.
  EXPECT_EQ(num_reordered > 0, quant.config.is_hybrid()) << preset;
  if (quant.config.num_experts > 0) EXPECT_EQ(num_experts, 3 * quant.config.num_experts * 4) << preset;
}

INSTANTIATE_TEST_SUITE_P(Presets, GgufHybridKQuantTest,
                         ::testing::Values("qwen3.5-tiny-k", "qwen3.5-moe-tiny-k", "qwen3-moe-tiny-k"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& ch : name) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return name;
                         });

}  // namespace
}  // namespace pagellm
