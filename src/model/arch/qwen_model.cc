#include "model/arch/qwen_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "model/arch/forward_input_validation.h"
#include "model/arch/model_rope.h"
#include "tensor/half.h"

namespace pagellm {
namespace {

Status CheckShape(const TensorView& t, const std::vector<int64_t>& want, const std::string& name) {
  if (t.empty()) return InvalidArgumentError(fmt::format("weight {} is missing", name));
  if (t.shape != want) {
    return InvalidArgumentError(fmt::format("weight {} has shape {}, expected {}", name, ShapeToString(t.shape),
                                            ShapeToString(want)));
  }
  // Q8_0, Q4_K, Q6_K (GGUF) only for 2-D weights: linear layers and the embedding, which
  // the backend reads natively; norms and biases are read here as floats.
  const bool q8_0_ok = DTypeBlockSize(t.dtype) > 1 && want.size() == 2;
  if (t.dtype != DType::kBF16 && t.dtype != DType::kF16 && t.dtype != DType::kF32 && !q8_0_ok) {
    return InvalidArgumentError(fmt::format("weight {} has unsupported dtype {}", name, DTypeName(t.dtype)));
  }
  return OkStatus();
}

StatusOr<std::vector<float>> NormWeight(const TensorView& t, int64_t dim, const std::string& name) {
  PAGELLM_RETURN_IF_ERROR(CheckShape(t, {dim}, name));
  std::vector<float> out(static_cast<size_t>(dim));
  for (int64_t i = 0; i < dim; ++i) {
    const void* p = t.data;
    out[static_cast<size_t>(i)] = t.dtype == DType::kF32    ? static_cast<const float*>(p)[i]
                                  : t.dtype == DType::kBF16 ? Bf16ToF32(static_cast<const uint16_t*>(p)[i])
                                                            : F16ToF32(static_cast<const uint16_t*>(p)[i]);
  }
  return out;
}

}  // namespace

StatusOr<std::unique_ptr<QwenModel>> QwenModel::Create(const ModelConfig& config, const ModelWeights& weights,
                                                       Backend& backend, int32_t max_num_tokens,
                                                       const LinearOptions& linear_options,
                                                       const TensorParallelism& tp) {
  const ModelConfig& c = config;
  if (c.is_hybrid()) {
    return InvalidArgumentError(fmt::format("QwenModel: {} is a hybrid model; use HybridModel", c.model_type));
  }
  bool needs_dense_mlp = false;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) needs_dense_mlp = needs_dense_mlp || !c.IsMoeLayer(l);
  if (c.vocab_size <= 0 || c.hidden_size <= 0 || (needs_dense_mlp && c.intermediate_size <= 0) ||
      c.num_hidden_layers <= 0 ||
      c.num_attention_heads <= 0 || c.num_key_value_heads <= 0 || c.head_dim <= 0 ||
      c.num_attention_heads % c.num_key_value_heads != 0) {
    return InvalidArgumentError("QwenModel: model config has non-positive sizes or nh % nkv != 0");
  }
  if (max_num_tokens <= 0) return InvalidArgumentError("QwenModel: max_num_tokens must be positive");
  if (static_cast<int64_t>(weights.layers.size()) != c.num_hidden_layers) {
    return InvalidArgumentError(fmt::format("QwenModel: {} layer weight sets for {} layers", weights.layers.size(),
                                            c.num_hidden_layers));
  }
  std::unique_ptr<QwenModel> model(new QwenModel(config, backend, max_num_tokens, linear_options));
  PAGELLM_ASSIGN_OR_RETURN(model->par_, MakeParallelRuntime(tp, c));
  PAGELLM_ASSIGN_OR_RETURN(model->rope_, BuildRopeTable(MakeRopeParams(c)));
  PAGELLM_RETURN_IF_ERROR(model->PrepareWeights(weights));
  PAGELLM_RETURN_IF_ERROR(model->AllocateWorkspace());
  return model;
}

Status QwenModel::PrepareWeights(const ModelWeights& w) {
  const ModelConfig& c = config_;
  const int64_t h = c.hidden_size, q = c.q_size(), kv = c.kv_size(), inter = c.intermediate_size;
  if (par_.tp.pipeline.first()) {
    PAGELLM_RETURN_IF_ERROR(CheckShape(w.embed_tokens, {c.vocab_size, h}, "embed_tokens"));
    embed_tokens_ = w.embed_tokens;
  }
  auto linear = [&](const TensorView& wt, const TensorView& bias, std::vector<int64_t> shape, bool want_bias,
                    const std::string& name) -> StatusOr<std::unique_ptr<LinearWeight>> {
    PAGELLM_RETURN_IF_ERROR(CheckShape(wt, shape, name));
    if (want_bias) PAGELLM_RETURN_IF_ERROR(CheckShape(bias, {shape[0]}, name + ".bias"));
    return backend_.PrepareLinear(wt, want_bias ? bias : TensorView{}, linear_options_);
  };
  // Weights that read the same input, [rows, h] each, as one backend weight; null when the
  // backend cannot stack them (then they are prepared one by one).
  struct Part {
    const TensorView* weight;
    const TensorView* bias;  // null: none
    int64_t rows;
    const char* name;
  };
  auto stacked = [&](std::initializer_list<Part> parts, bool want_bias,
                     const std::string& prefix) -> StatusOr<std::unique_ptr<LinearWeight>> {
    std::vector<TensorView> weights, biases;
    for (const Part& part : parts) {
      PAGELLM_RETURN_IF_ERROR(CheckShape(*part.weight, {part.rows, h}, prefix + part.name));
      if (want_bias) PAGELLM_RETURN_IF_ERROR(CheckShape(*part.bias, {part.rows}, prefix + part.name + ".bias"));
      weights.push_back(*part.weight);
      biases.push_back(want_bias ? *part.bias : TensorView{});
    }
    return backend_.PrepareStackedLinear(weights, biases, linear_options_);
  };
  for (int64_t i = par_.layers.first; i < par_.layers.end; ++i) {
    const LayerWeights& lw = w.layers[static_cast<size_t>(i)];
    const std::string p = fmt::format("layers.{}.", i);
    Layer layer;
    PAGELLM_ASSIGN_OR_RETURN(layer.input_norm, NormWeight(lw.input_layernorm, h, p + "input_layernorm"));
    PAGELLM_ASSIGN_OR_RETURN(layer.post_norm, NormWeight(lw.post_attention_layernorm, h, p + "post_attention_layernorm"));
    if (c.qk_norm) {
      PAGELLM_ASSIGN_OR_RETURN(layer.q_norm, NormWeight(lw.q_norm, c.head_dim, p + "q_norm"));
      PAGELLM_ASSIGN_OR_RETURN(layer.k_norm, NormWeight(lw.k_norm, c.head_dim, p + "k_norm"));
    }
    PAGELLM_ASSIGN_OR_RETURN(layer.qkv_proj, stacked({{&lw.q_proj, &lw.q_bias, q, "q_proj"},
                                                      {&lw.k_proj, &lw.k_bias, kv, "k_proj"},
                                                      {&lw.v_proj, &lw.v_bias, kv, "v_proj"}},
                                                     c.qkv_bias, p));
    if (layer.qkv_proj == nullptr) {
      PAGELLM_ASSIGN_OR_RETURN(layer.q_proj, linear(lw.q_proj, lw.q_bias, {q, h}, c.qkv_bias, p + "q_proj"));
      PAGELLM_ASSIGN_OR_RETURN(layer.k_proj, linear(lw.k_proj, lw.k_bias, {kv, h}, c.qkv_bias, p + "k_proj"));
      PAGELLM_ASSIGN_OR_RETURN(layer.v_proj, linear(lw.v_proj, lw.v_bias, {kv, h}, c.qkv_bias, p + "v_proj"));
    }
    PAGELLM_ASSIGN_OR_RETURN(layer.o_proj, linear(lw.o_proj, lw.o_bias, {h, q}, c.o_bias, p + "o_proj"));
    if (c.IsMoeLayer(i)) {
      PAGELLM_ASSIGN_OR_RETURN(layer.moe, MoeBlock::Create(c, lw, backend_, max_num_tokens_, p));
    } else {
      PAGELLM_ASSIGN_OR_RETURN(layer.gate_up_proj, stacked({{&lw.gate_proj, nullptr, inter, "gate_proj"},
                                                            {&lw.up_proj, nullptr, inter, "up_proj"}},
                                                           false, p));
      if (layer.gate_up_proj == nullptr) {
        PAGELLM_ASSIGN_OR_RETURN(layer.gate_proj, linear(lw.gate_proj, {}, {inter, h}, false, p + "gate_proj"));
        PAGELLM_ASSIGN_OR_RETURN(layer.up_proj, linear(lw.up_proj, {}, {inter, h}, false, p + "up_proj"));
      }
      PAGELLM_ASSIGN_OR_RETURN(layer.down_proj, linear(lw.down_proj, {}, {h, inter}, false, p + "down_proj"));
    }
    layers_.push_back(std::move(layer));
  }
  if (!par_.tp.pipeline.last()) return OkStatus();  // the final norm and lm_head are the last stage's
  PAGELLM_ASSIGN_OR_RETURN(final_norm_, NormWeight(w.norm, h, "norm"));
  const TensorView& head = (c.tie_word_embeddings && w.lm_head.empty()) ? w.embed_tokens : w.lm_head;
  PAGELLM_ASSIGN_OR_RETURN(lm_head_, linear(head, {}, {par_.tp.lm_head_rows, h}, false, "lm_head"));
  return OkStatus();
}

Status QwenModel::AllocateWorkspace() {
  const int64_t t = max_num_tokens_, h = config_.hidden_size, q = config_.q_size(), kv = config_.kv_size();
  const int64_t inter = config_.intermediate_size;
  // Each buffer rounded up to 16 floats so every one starts 64-byte aligned.
  auto round = [](int64_t n) { return (n + 15) / 16 * 16; };
  const std::vector<int64_t> sizes = {t * h, t * h, t * q, t * kv, t * kv, t * q, t * h, t * inter, t * inter};
  int64_t total = 0;
  for (int64_t s : sizes) total += round(s);
  PAGELLM_ASSIGN_OR_RETURN(workspace_, backend_.Allocate(static_cast<size_t>(total) * sizeof(float)));
  // Every step writes here; fault it in now, as the KV cache's first blocks are
  // (PagedKvCache::PrefaultStartupBlocks), not in the first prompt's step.
  workspace_.Prefault(0, workspace_.size());
  float* p = workspace_.as<float>();
  float** slots[] = {&buf_.hidden, &buf_.normed, &buf_.q, &buf_.k, &buf_.v, &buf_.attn, &buf_.proj, &buf_.gate, &buf_.up};
  for (size_t i = 0; i < sizes.size(); ++i) {
    *slots[i] = p;
    p += round(sizes[i]);
  }
  return OkStatus();
}

KvCacheSpec QwenModel::MakeKvCacheSpec(int64_t num_blocks, int64_t block_size, DType dtype) const {
  return KvCacheSpec{.num_layers = par_.layers.size(), .num_blocks = num_blocks, .block_size = block_size,
                     .num_kv_heads = config_.num_key_value_heads, .head_dim = config_.head_dim, .dtype = dtype};
}

Status QwenModel::AllReduce(float* partial, int64_t num_tokens) {
  if (par_.tp.comm == nullptr) return OkStatus();
  return par_.tp.comm->AllReduceSum(partial, num_tokens * config_.hidden_size, DType::kF32);
}

Status QwenModel::RunAttention(const Layer& layer, int64_t layer_idx, const ForwardInput& in, PagedKvCache& kv) {
  const ModelConfig& c = config_;
  const int64_t t = in.num_tokens(), nh = c.num_attention_heads, nkv = c.num_key_value_heads, hd = c.head_dim;
  const float eps = static_cast<float>(c.rms_norm_eps);
  backend_.RmsNorm(buf_.hidden, layer.input_norm.data(), t, c.hidden_size, eps, buf_.normed);
  if (layer.qkv_proj != nullptr) {
    float* const qkv[] = {buf_.q, buf_.k, buf_.v};
    backend_.LinearStacked(*layer.qkv_proj, buf_.normed, t, qkv);
  } else {
    backend_.Linear(*layer.q_proj, buf_.normed, t, buf_.q);  // [T, nh*hd]
    backend_.Linear(*layer.k_proj, buf_.normed, t, buf_.k);  // [T, nkv*hd]
    backend_.Linear(*layer.v_proj, buf_.normed, t, buf_.v);  // [T, nkv*hd]
  }
  if (c.qk_norm) {  // Qwen3: RMSNorm over each head's hd values, before RoPE
    backend_.RmsNorm(buf_.q, layer.q_norm.data(), t * nh, hd, eps, buf_.q);
    backend_.RmsNorm(buf_.k, layer.k_norm.data(), t * nkv, hd, eps, buf_.k);
  }
  backend_.Rope(rope_, in.positions, nh, hd, buf_.q);
  backend_.Rope(rope_, in.positions, nkv, hd, buf_.k);
  const KvLayerView cache = kv.layer(layer_idx);
  backend_.WriteKv(buf_.k, buf_.v, in.slot_mapping, cache);
  AttentionBatch batch{.query_start_loc = in.query_start_loc, .seq_lens = in.seq_lens,
                       .block_tables = in.block_tables, .max_blocks_per_seq = in.max_blocks_per_seq};
  AttentionDims dims{.num_heads = nh, .num_kv_heads = nkv, .head_dim = hd,
                     .scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)))};
  backend_.PagedAttention(buf_.q, cache, batch, dims, buf_.attn);  // [T, nh*hd]
  backend_.Linear(*layer.o_proj, buf_.attn, t, buf_.proj);
  PAGELLM_RETURN_IF_ERROR(AllReduce(buf_.proj, t));
  backend_.AddInPlace(buf_.proj, t * c.hidden_size, buf_.hidden);
  return OkStatus();
}

Status QwenModel::RunMlp(const Layer& layer, int64_t t) {
  const ModelConfig& c = config_;
  backend_.RmsNorm(buf_.hidden, layer.post_norm.data(), t, c.hidden_size, static_cast<float>(c.rms_norm_eps),
                   buf_.normed);
  if (layer.moe) {
    layer.moe->Forward(buf_.normed, t, buf_.proj);  // [T, H]
    PAGELLM_RETURN_IF_ERROR(AllReduce(buf_.proj, t));
    backend_.AddInPlace(buf_.proj, t * c.hidden_size, buf_.hidden);
    return OkStatus();
  }
  if (layer.gate_up_proj != nullptr) {
    float* const gate_up[] = {buf_.gate, buf_.up};
    backend_.LinearStacked(*layer.gate_up_proj, buf_.normed, t, gate_up);
  } else {
    backend_.Linear(*layer.gate_proj, buf_.normed, t, buf_.gate);  // [T, I]
    backend_.Linear(*layer.up_proj, buf_.normed, t, buf_.up);      // [T, I]
  }
  backend_.SiluMul(buf_.gate, buf_.up, t * c.intermediate_size, buf_.gate);
  backend_.Linear(*layer.down_proj, buf_.gate, t, buf_.proj);  // [T, H]
  PAGELLM_RETURN_IF_ERROR(AllReduce(buf_.proj, t));
  backend_.AddInPlace(buf_.proj, t * c.hidden_size, buf_.hidden);
  return OkStatus();
}

Status QwenModel::Forward(const ForwardInput& input, PagedKvCache& kv, float* logits) {
  PAGELLM_RETURN_IF_ERROR(ValidateInput(input, kv));
  const int64_t t = input.num_tokens(), h = config_.hidden_size;
  const int64_t num_logits = static_cast<int64_t>(input.logits_indices.size());
  if (par_.stage == nullptr || par_.stage->first()) {
    backend_.Embedding(embed_tokens_, input.token_ids, buf_.hidden);
  } else {
    PAGELLM_RETURN_IF_ERROR(par_.stage->ReceiveHidden(buf_.hidden, t * h));
  }
  for (size_t i = 0; i < layers_.size(); ++i) {
    PAGELLM_RETURN_IF_ERROR(RunAttention(layers_[i], static_cast<int64_t>(i), input, kv));
    PAGELLM_RETURN_IF_ERROR(RunMlp(layers_[i], t));
  }
  if (par_.stage != nullptr && !par_.stage->last()) {
    return par_.stage->SendHidden(buf_.hidden, t * h, logits, num_logits * config_.vocab_size);
  }
  if (par_.stage != nullptr) logits = par_.stage->LogitsBuffer(logits, num_logits * config_.vocab_size);
  PAGELLM_RETURN_IF_ERROR(RunHead(input, logits));
  return par_.stage != nullptr ? par_.stage->SendLogits(num_logits * config_.vocab_size) : OkStatus();
}

Status QwenModel::RunHead(const ForwardInput& input, float* logits) {
  const int64_t h = config_.hidden_size;
  // Only the rows the sampler needs go through the final norm and lm_head.
  const int64_t num_logits = static_cast<int64_t>(input.logits_indices.size());
  for (int64_t r = 0; r < num_logits; ++r) {
    std::memcpy(buf_.normed + r * h, buf_.hidden + int64_t{input.logits_indices[static_cast<size_t>(r)]} * h,
                static_cast<size_t>(h) * sizeof(float));
  }
  backend_.RmsNorm(buf_.normed, final_norm_.data(), num_logits, h, static_cast<float>(config_.rms_norm_eps),
                   buf_.normed);
  if (par_.head != nullptr) return par_.head->Run(backend_, *lm_head_, buf_.normed, num_logits, h, logits);
  if (num_logits > 0) backend_.Linear(*lm_head_, buf_.normed, num_logits, logits);
  return OkStatus();
}

Status QwenModel::ValidateInput(const ForwardInput& input, const PagedKvCache& kv) const {
  const KvCacheSpec& spec = kv.spec();
  if (spec.num_layers != par_.layers.size() || spec.num_kv_heads != config_.num_key_value_heads ||
      spec.head_dim != config_.head_dim) {
    return InvalidArgumentError(fmt::format(
        "KV cache (layers {}, kv heads {}, head_dim {}) does not match the model ({}, {}, {})", spec.num_layers,
        spec.num_kv_heads, spec.head_dim, par_.layers.size(), config_.num_key_value_heads, config_.head_dim));
  }
  ForwardLimits limits{.max_num_tokens = max_num_tokens_, .vocab_size = config_.vocab_size,
                       .max_positions = rope_.max_positions, .num_blocks = spec.num_blocks,
                       .block_size = spec.block_size};
  return ValidateForwardInput(input, limits);
}

}  // namespace pagellm
