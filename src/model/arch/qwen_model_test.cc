// QwenModel on tiny random Qwen2/Qwen3 models (V=512, H=64, 2 layers, GQA 4/2).
//
// Tolerances (logits are O(1..5) here):
// - cpu (AVX2, GEMV only, f32 weights, f32 KV) vs reference: max abs 2e-4 (fp32 vs double).
// - cpu default (bf16 weights, bf16 KV, bf16-activation GEMV/oneDNN) vs reference:
//   max abs 0.05 * max|logit| (bf16 rounding of activations, ~2^-9 relative per GEMM).
// - same backend, different batching (all-at-once / token-by-token / chunks 1,3,7 /
//   two sequences batched): f32 weights+KV on AVX2 GEMV-only: 2e-4; default cpu with bf16
//   weights+KV: 0.05 * max|logit| (the GEMM path changes with M).
#include "model/arch/qwen_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "backend/cpu/cpu_backend.h"
#include "backend/reference/reference_backend.h"

namespace pagellm {
namespace {

struct TinyModel {
  ModelConfig config;
  ModelWeights weights;
  std::vector<std::vector<uint8_t>> blobs;
  std::mt19937 rng{1234};

  TensorView Make(std::vector<int64_t> shape, DType dtype, float scale, float offset = 0.0f) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    blobs.emplace_back(static_cast<size_t>(n) * DTypeSize(dtype));
    std::normal_distribution<float> dist(offset, scale);
    for (int64_t i = 0; i < n; ++i) StoreElementFromF32(blobs.back().data(), dtype, i, dist(rng));
    return TensorView{blobs.back().data(), dtype, std::move(shape)};
  }
};

std::unique_ptr<TinyModel> BuildTiny(bool qwen3, bool tied, DType dtype) {
  auto m = std::make_unique<TinyModel>();
  ModelConfig& c = m->config;
  c.model_type = qwen3 ? "qwen3" : "qwen2";
  c.arch = qwen3 ? ModelArch::kQwen3 : ModelArch::kQwen2;
  c.vocab_size = 512;
  c.hidden_size = 64;
  c.intermediate_size = 192;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = qwen3 ? 32 : 16;  // Qwen3: nh*hd != H on purpose
  c.rope_theta = 10000.0;
  c.max_position_embeddings = 256;
  c.tie_word_embeddings = tied;
  c.qkv_bias = !qwen3;
  c.qk_norm = qwen3;
  const int64_t h = c.hidden_size, q = c.q_size(), kv = c.kv_size(), inter = c.intermediate_size;
  ModelWeights& w = m->weights;
  w.embed_tokens = m->Make({c.vocab_size, h}, dtype, 1.0f);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    LayerWeights lw;
    lw.input_layernorm = m->Make({h}, dtype, 0.1f, 1.0f);
    lw.post_attention_layernorm = m->Make({h}, dtype, 0.1f, 1.0f);
    lw.q_proj = m->Make({q, h}, dtype, 0.5f / std::sqrt(float(h)));
    lw.k_proj = m->Make({kv, h}, dtype, 0.5f / std::sqrt(float(h)));
    lw.v_proj = m->Make({kv, h}, dtype, 1.0f / std::sqrt(float(h)));
    lw.o_proj = m->Make({h, q}, dtype, 1.0f / std::sqrt(float(q)));
    if (c.qkv_bias) {
      lw.q_bias = m->Make({q}, dtype, 0.2f);
      lw.k_bias = m->Make({kv}, dtype, 0.2f);
      lw.v_bias = m->Make({kv}, dtype, 0.2f);
    }
    if (c.qk_norm) {
      lw.q_norm = m->Make({c.head_dim}, dtype, 0.1f, 1.5f);
      lw.k_norm = m->Make({c.head_dim}, dtype, 0.1f, 1.5f);
    }
    lw.gate_proj = m->Make({inter, h}, dtype, 1.0f / std::sqrt(float(h)));
    lw.up_proj = m->Make({inter, h}, dtype, 1.0f / std::sqrt(float(h)));
    lw.down_proj = m->Make({h, inter}, dtype, 1.0f / std::sqrt(float(inter)));
    w.layers.push_back(lw);
  }
  w.norm = m->Make({h}, dtype, 0.1f, 1.0f);
  w.lm_head = tied ? w.embed_tokens : m->Make({c.vocab_size, h}, dtype, 3.0f / std::sqrt(float(h)));
  return m;
}

// Runs `tokens` of several independent sequences, fed in steps. steps[i] lists, per
// sequence, how many new tokens that sequence contributes in step i (0 = absent).
// Returns the logits of every token of every sequence: [seq][token][vocab].
std::vector<std::vector<std::vector<float>>> RunSteps(QwenModel& model, const std::vector<std::vector<int32_t>>& seqs,
                                                      const std::vector<std::vector<int32_t>>& steps, DType kv_dtype) {
  const int32_t block_size = 4, max_blocks = 16;
  auto kv = PagedKvCache::Create(model.MakeKvCacheSpec(64, block_size, kv_dtype));
  EXPECT_TRUE(kv.ok());
  // Sequence s gets blocks 63 - s, 61 - s, ... (scattered, interleaved, descending).
  std::vector<int32_t> tables(seqs.size() * max_blocks);
  for (size_t s = 0; s < seqs.size(); ++s)
    for (int32_t b = 0; b < max_blocks; ++b) tables[s * max_blocks + b] = 63 - static_cast<int32_t>(s) - 4 * b;
  const int64_t vocab = model.config().vocab_size;
  std::vector<std::vector<std::vector<float>>> out(seqs.size());
  std::vector<int32_t> done(seqs.size(), 0);
  for (const auto& step : steps) {
    std::vector<int32_t> ids, pos, qsl = {0}, lens, table, rows;
    std::vector<int64_t> slots;
    std::vector<size_t> owners;
    for (size_t s = 0; s < seqs.size(); ++s) {
      if (step[s] == 0) continue;
      for (int32_t i = 0; i < step[s]; ++i) {
        int32_t p = done[s] + i;
        ids.push_back(seqs[s][static_cast<size_t>(p)]);
        pos.push_back(p);
        slots.push_back(int64_t{tables[s * max_blocks + p / block_size]} * block_size + p % block_size);
        rows.push_back(static_cast<int32_t>(ids.size()) - 1);
      }
      done[s] += step[s];
      qsl.push_back(static_cast<int32_t>(ids.size()));
      lens.push_back(done[s]);
      table.insert(table.end(), tables.begin() + s * max_blocks, tables.begin() + (s + 1) * max_blocks);
      owners.push_back(s);
    }
    ForwardInput in{.token_ids = ids, .positions = pos, .slot_mapping = slots, .query_start_loc = qsl,
                    .seq_lens = lens, .block_tables = table, .max_blocks_per_seq = max_blocks, .logits_indices = rows,
                    .state_slots = {}};
    std::vector<float> logits(rows.size() * vocab);
    Status st = model.Forward(in, **kv, logits.data());
    EXPECT_TRUE(st.ok()) << st;
    size_t r = 0;
    for (size_t j = 0; j < owners.size(); ++j)
      for (int32_t i = qsl[j]; i < qsl[j + 1]; ++i, ++r)
        out[owners[j]].emplace_back(logits.begin() + r * vocab, logits.begin() + (r + 1) * vocab);
  }
  return out;
}

double MaxAbs(const std::vector<std::vector<std::vector<float>>>& a) {
  double m = 0;
  for (const auto& s : a) for (const auto& t : s) for (float v : t) m = std::max(m, double(std::abs(v)));
  return m;
}

void ExpectSameLogits(const std::vector<std::vector<std::vector<float>>>& got,
                      const std::vector<std::vector<std::vector<float>>>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0;
  for (size_t s = 0; s < got.size(); ++s) {
    ASSERT_EQ(got[s].size(), want[s].size()) << what;
    for (size_t t = 0; t < got[s].size(); ++t)
      for (size_t v = 0; v < got[s][t].size(); ++v) worst = std::max(worst, double(std::abs(got[s][t][v] - want[s][t][v])));
  }
  EXPECT_LE(worst, tol) << what;
}

const std::vector<int32_t> kPromptA = {1, 77, 300, 5, 5, 12, 480, 33, 2, 99, 100, 101, 7, 250, 511, 0, 42, 42, 9, 64};
const std::vector<int32_t> kPromptB = {400, 3, 17, 17, 17, 256, 128, 64, 32, 16, 8};

std::vector<std::vector<int32_t>> Chunks(int32_t total, int32_t chunk) {
  std::vector<std::vector<int32_t>> steps;
  for (int32_t done = 0; done < total; done += chunk) steps.push_back({std::min(chunk, total - done)});
  return steps;
}

struct Variant {
  const char* name;
  bool qwen3, tied;
};
const Variant kVariants[] = {{"qwen3_untied", true, false}, {"qwen3_tied", true, true},
                             {"qwen2_bias_untied", false, false}, {"qwen2_bias_tied", false, true}};

// Two sequences, mixed steps: A prefill chunk; A decode + B prefill; A chunk + B decode.
const std::vector<std::vector<int32_t>> kMixedSteps = {{12, 0}, {1, 11}, {7, 0}};

TEST(QwenModel, CpuMatchesReference) {
  for (const Variant& v : kVariants) {
    for (DType dtype : {DType::kF32, DType::kBF16}) {
      auto tiny = BuildTiny(v.qwen3, v.tied, dtype);
      ReferenceBackend ref;
      CpuBackendOptions opts;  // bf16: the production setting (auto ISA, GEMV + oneDNN)
      if (dtype == DType::kF32) opts = {.isa = CpuIsa::kAvx2, .gemv_max_rows = 1 << 30, .use_dnnl = false};
      CpuBackend cpu(opts);
      auto ref_model = QwenModel::Create(tiny->config, tiny->weights, ref, 64);
      auto cpu_model = QwenModel::Create(tiny->config, tiny->weights, cpu, 64);
      ASSERT_TRUE(ref_model.ok() && cpu_model.ok()) << ref_model.status() << cpu_model.status();
      auto want = RunSteps(**ref_model, {kPromptA, kPromptB}, kMixedSteps, dtype);
      auto got = RunSteps(**cpu_model, {kPromptA, kPromptB}, kMixedSteps, dtype);
      double tol = dtype == DType::kF32 ? 2e-4 : 0.05 * MaxAbs(want);
      ExpectSameLogits(got, want, tol, std::string(v.name) + " " + std::string(DTypeName(dtype)));
      // Not degenerate: logits are O(1) and differ between positions holding the same token.
      EXPECT_GT(MaxAbs(want), 1.0) << v.name;
      double diff = 0;
      for (size_t i = 0; i < want[0][3].size(); ++i) diff = std::max(diff, double(std::abs(want[0][3][i] - want[0][4][i])));
      EXPECT_GT(diff, 1e-2) << v.name << ": context has no effect";
    }
  }
}

void CheckBatchingInvariance(CpuBackendOptions opts, DType dtype, double rel_tol) {
  for (const Variant& v : kVariants) {
    auto tiny = BuildTiny(v.qwen3, v.tied, dtype);
    CpuBackend cpu(opts);
    auto model = QwenModel::Create(tiny->config, tiny->weights, cpu, 64);
    ASSERT_TRUE(model.ok()) << model.status();
    const int32_t n = static_cast<int32_t>(kPromptA.size());
    auto all_at_once = RunSteps(**model, {kPromptA}, {{n}}, dtype);
    const double tol = rel_tol * MaxAbs(all_at_once);
    for (int32_t chunk : {1, 3, 7}) {
      ExpectSameLogits(RunSteps(**model, {kPromptA}, Chunks(n, chunk), dtype), all_at_once, tol,
                       std::string(v.name) + " chunk " + std::to_string(chunk));
    }
    auto b_alone = RunSteps(**model, {kPromptB}, {{static_cast<int32_t>(kPromptB.size())}}, dtype);
    auto both = RunSteps(**model, {kPromptA, kPromptB}, kMixedSteps, dtype);
    ExpectSameLogits({both[0]}, all_at_once, tol, std::string(v.name) + " batched A");
    ExpectSameLogits({both[1]}, b_alone, tol, std::string(v.name) + " batched B");
  }
}

TEST(QwenModel, BatchingInvarianceF32Exactish) {
  CheckBatchingInvariance({.isa = CpuIsa::kAvx2, .gemv_max_rows = 1 << 30, .use_dnnl = false}, DType::kF32, 5e-5);
}

TEST(QwenModel, BatchingInvarianceBf16Production) {
  CheckBatchingInvariance(CpuBackendOptions{}, DType::kBF16, 0.05);
}

TEST(QwenModel, RejectsBadInput) {
  auto tiny = BuildTiny(true, false, DType::kF32);
  ReferenceBackend ref;
  auto model = QwenModel::Create(tiny->config, tiny->weights, ref, 8);
  ASSERT_TRUE(model.ok());
  auto kv = PagedKvCache::Create((*model)->MakeKvCacheSpec(8, 4, DType::kF32));
  ASSERT_TRUE(kv.ok());
  std::vector<int32_t> ids = {1, 2, 3}, pos = {0, 1, 2}, qsl = {0, 3}, lens = {3}, table = {5, 6}, rows = {2};
  std::vector<int64_t> slots = {20, 21, 22};
  std::vector<float> logits(512);
  ForwardInput good{.token_ids = ids, .positions = pos, .slot_mapping = slots, .query_start_loc = qsl,
                    .seq_lens = lens, .block_tables = table, .max_blocks_per_seq = 2, .logits_indices = rows,
                    .state_slots = {}};
  EXPECT_TRUE((*model)->Forward(good, **kv, logits.data()).ok());
  auto expect_bad = [&](ForwardInput in, const char* what) {
    Status st = (*model)->Forward(in, **kv, logits.data());
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << what;
  };
  std::vector<int32_t> bad_ids = {1, 2, 512}, bad_pos = {0, 2, 2}, bad_table = {8, 6}, nine(9, 1);
  ForwardInput in = good; in.token_ids = bad_ids; expect_bad(in, "token id >= vocab");
  in = good; in.positions = bad_pos; expect_bad(in, "position inconsistent with seq_len");
  in = good; in.block_tables = bad_table; expect_bad(in, "block id out of range");
  in = good; in.token_ids = nine; expect_bad(in, "more tokens than max_num_tokens / positions");
  std::vector<int32_t> long_lens = {9};
  in = good; in.seq_lens = long_lens; expect_bad(in, "seq_len needs more blocks than the table has");
  auto wrong_kv = PagedKvCache::Create(KvCacheSpec{.num_layers = 1, .num_blocks = 8, .block_size = 4,
                                                   .num_kv_heads = 2, .head_dim = 32});
  EXPECT_FALSE((*model)->Forward(good, **wrong_kv, logits.data()).ok());
}

TEST(QwenModel, RejectsBadWeights) {
  auto tiny = BuildTiny(false, false, DType::kF32);
  ReferenceBackend ref;
  tiny->weights.layers[1].k_proj.shape = {64, 64};
  auto model = QwenModel::Create(tiny->config, tiny->weights, ref, 8);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("layers.1.k_proj"), std::string::npos) << model.status();
  tiny->weights.layers[1].k_proj.shape = {32, 64};
  tiny->weights.layers[0].q_bias = {};
  EXPECT_FALSE(QwenModel::Create(tiny->config, tiny->weights, ref, 8).ok());
}

}  // namespace
}  // namespace pagellm
