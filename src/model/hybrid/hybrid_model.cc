#include "model/hybrid/hybrid_model.h"

#include <cmath>
#include <cstring>
#include <set>

#include <fmt/format.h>

#include "model/arch/forward_input_validation.h"
#include "model/arch/model_rope.h"
#include "model/arch/weight_checks.h"
#include "model/hybrid/gated_attention.h"
#include "model/hybrid/qwen3_next_layout.h"
#include "model/tensor_source.h"

namespace pagellm {
namespace {

// fp32 copy of a zero-centred norm weight with 1 + w folded in (Backend::RmsNorm then
// computes x * r * (1 + w)).
StatusOr<std::vector<float>> FoldedNorm(const TensorView& t, int64_t dim, const std::string& name) {
  PAGELLM_ASSIGN_OR_RETURN(std::vector<float> w, WeightToF32(t, {dim}, name));
  FoldZeroCenteredWeight(w.data(), dim, w.data());
  return w;
}

// New matrix whose row r is row source_index[r] of `t` (same dtype, whole rows).
TensorView PermuteRows(const TensorView& t, const std::vector<int64_t>& source_index,
                       std::vector<std::shared_ptr<void>>& owner) {
  const size_t row_bytes = DTypeBytes(t.dtype, t.dim(1));
  std::shared_ptr<void> buffer = AllocateAligned(row_bytes * source_index.size());
  for (size_t r = 0; r < source_index.size(); ++r) {
    std::memcpy(static_cast<char*>(buffer.get()) + r * row_bytes,
                static_cast<const char*>(t.data) + static_cast<size_t>(source_index[r]) * row_bytes, row_bytes);
  }
  owner.push_back(buffer);
  return TensorView{buffer.get(), t.dtype, {static_cast<int64_t>(source_index.size()), t.dim(1)}};
}

// Rows [begin, begin + n) of a 2-D matrix (no copy).
TensorView RowRange(const TensorView& t, int64_t begin, int64_t n) {
  TensorView v = t;
  v.data = static_cast<char*>(t.data) + DTypeBytes(t.dtype, begin * t.dim(1));
  v.shape = {n, t.dim(1)};
  return v;
}

}  // namespace

HybridModel::HybridModel(const ModelConfig& config, Backend& backend, int32_t max_num_tokens,
                         const LinearOptions& linear_options)
    : config_(config), backend_(backend), max_num_tokens_(max_num_tokens), linear_options_(linear_options) {
  gdn_dims_ = GdnDims{.num_k_heads = config.linear_num_key_heads, .num_v_heads = config.linear_num_value_heads,
                      .k_head_dim = config.linear_key_head_dim, .v_head_dim = config.linear_value_head_dim,
                      .conv_kernel = config.linear_conv_kernel_dim, .head_mapping = GdnHeadMapping::kGrouped};
}

StatusOr<std::unique_ptr<HybridModel>> HybridModel::Create(const ModelConfig& config, const ModelWeights& weights,
                                                           Backend& backend, int32_t max_num_tokens,
                                                           const LinearOptions& linear_options,
                                                           const TensorParallelism& tp) {
  const ModelConfig& c = config;
  if (!c.is_hybrid() || !c.gated_attention || !c.zero_centered_norms) {
    return InvalidArgumentError(fmt::format("HybridModel: {} is not a hybrid (Qwen3-Next / Qwen3.5) config",
                                            c.model_type));
  }
  if (c.num_attention_heads % c.num_key_value_heads != 0 || max_num_tokens <= 0) {
    return InvalidArgumentError("HybridModel: nh % nkv != 0 or non-positive max_num_tokens");
  }
  if (static_cast<int64_t>(weights.layers.size()) != c.num_hidden_layers) {
    return InvalidArgumentError(fmt::format("HybridModel: {} layer weight sets for {} layers", weights.layers.size(),
                                            c.num_hidden_layers));
  }
  std::unique_ptr<HybridModel> model(new HybridModel(config, backend, max_num_tokens, linear_options));
  PAGELLM_ASSIGN_OR_RETURN(model->par_, MakeParallelRuntime(tp, c));
  PAGELLM_RETURN_IF_ERROR(ValidateGdnDims(model->gdn_dims_));
  PAGELLM_ASSIGN_OR_RETURN(model->rope_, BuildRopeTable(MakeRopeParams(c)));
  PAGELLM_RETURN_IF_ERROR(model->PrepareWeights(weights));
  model->AllocateWorkspace();
  return model;
}

Status HybridModel::PrepareWeights(const ModelWeights& w) {
  const ModelConfig& c = config_;
  const int64_t h = c.hidden_size;
  if (par_.tp.pipeline.first()) {
    PAGELLM_RETURN_IF_ERROR(CheckWeightShape(w.embed_tokens, {c.vocab_size, h}, "embed_tokens"));
    embed_tokens_ = w.embed_tokens;
  }
  int64_t& num_full = num_full_;
  int64_t& num_gdn = num_gdn_;
  for (int64_t i = par_.layers.first; i < par_.layers.end; ++i) {
    const LayerWeights& lw = w.layers[static_cast<size_t>(i)];
    const std::string p = fmt::format("layers.{}.", i);
    Layer layer;
    layer.full_attention = c.IsFullAttentionLayer(i);
    layer.cache_idx = layer.full_attention ? num_full++ : num_gdn++;
    PAGELLM_ASSIGN_OR_RETURN(layer.input_norm, FoldedNorm(lw.input_layernorm, h, p + "input_layernorm"));
    PAGELLM_ASSIGN_OR_RETURN(layer.post_norm, FoldedNorm(lw.post_attention_layernorm, h, p + "post_attention_layernorm"));
    PAGELLM_RETURN_IF_ERROR(layer.full_attention ? PrepareAttention(lw, p, layer) : PrepareGdn(lw, p, layer));
    PAGELLM_RETURN_IF_ERROR(PrepareFfn(lw, c.IsMoeLayer(i), p, layer));
    layers_.push_back(std::move(layer));
  }
  if (!par_.tp.pipeline.last()) return OkStatus();  // the final norm and lm_head are the last stage's
  PAGELLM_ASSIGN_OR_RETURN(final_norm_, FoldedNorm(w.norm, h, "norm"));
  const TensorView& head = (c.tie_word_embeddings && w.lm_head.empty()) ? w.embed_tokens : w.lm_head;
  PAGELLM_RETURN_IF_ERROR(CheckWeightShape(head, {par_.tp.lm_head_rows, h}, "lm_head"));
  PAGELLM_ASSIGN_OR_RETURN(lm_head_, backend_.PrepareLinear(head, TensorView{}, linear_options_));
  if (w.mtp.present()) PAGELLM_RETURN_IF_ERROR(PrepareMtp(w.mtp));
  return OkStatus();
}

Status HybridModel::PrepareMtp(const MtpWeights& w) {
  const ModelConfig& c = config_;
  const int64_t h = c.hidden_size;
  if (par_.tp.comm != nullptr || par_.stage != nullptr) {
    return InvalidArgumentError("the MTP head runs on an unsharded model only (no tensor or pipeline parallelism)");
  }
  PAGELLM_RETURN_IF_ERROR(CheckWeightShape(w.fc, {h, 2 * h}, "mtp.fc"));
  PAGELLM_ASSIGN_OR_RETURN(mtp_fc_, backend_.PrepareLinear(w.fc, TensorView{}, linear_options_));
  PAGELLM_ASSIGN_OR_RETURN(mtp_norm_embedding_, FoldedNorm(w.pre_fc_norm_embedding, h, "mtp.pre_fc_norm_embedding"));
  PAGELLM_ASSIGN_OR_RETURN(mtp_norm_hidden_, FoldedNorm(w.pre_fc_norm_hidden, h, "mtp.pre_fc_norm_hidden"));
  PAGELLM_ASSIGN_OR_RETURN(mtp_norm_, FoldedNorm(w.norm, h, "mtp.norm"));
  for (size_t j = 0; j < w.layers.size(); ++j) {
    const LayerWeights& lw = w.layers[j];
    const std::string p = fmt::format("mtp.layers.{}.", j);
    Layer layer;
    layer.full_attention = true;
    layer.cache_idx = static_cast<int64_t>(j);
    PAGELLM_ASSIGN_OR_RETURN(layer.input_norm, FoldedNorm(lw.input_layernorm, h, p + "input_layernorm"));
    PAGELLM_ASSIGN_OR_RETURN(layer.post_norm, FoldedNorm(lw.post_attention_layernorm, h, p + "post_attention_layernorm"));
    PAGELLM_RETURN_IF_ERROR(PrepareAttention(lw, p, layer));
    // The MoE models' MTP layer is MoE too (vLLM builds it as decoder layer num_hidden_layers).
    PAGELLM_RETURN_IF_ERROR(PrepareFfn(lw, c.is_moe(), p, layer));
    mtp_layers_.push_back(std::move(layer));
  }
  return OkStatus();
}

Status HybridModel::PrepareAttention(const LayerWeights& w, const std::string& p, Layer& layer) {
  const ModelConfig& c = config_;
  const int64_t h = c.hidden_size, q = c.q_size(), kv = c.kv_size();
  auto linear = [&](const TensorView& t, std::vector<int64_t> shape,
                    const std::string& name) -> StatusOr<std::unique_ptr<LinearWeight>> {
    PAGELLM_RETURN_IF_ERROR(CheckWeightShape(t, shape, p + name));
    return backend_.PrepareLinear(t, TensorView{}, linear_options_);
  };
  PAGELLM_ASSIGN_OR_RETURN(layer.q_proj, linear(w.q_proj, {2 * q, h}, "self_attn.q_proj"));
  PAGELLM_ASSIGN_OR_RETURN(layer.k_proj, linear(w.k_proj, {kv, h}, "self_attn.k_proj"));
  PAGELLM_ASSIGN_OR_RETURN(layer.v_proj, linear(w.v_proj, {kv, h}, "self_attn.v_proj"));
  PAGELLM_ASSIGN_OR_RETURN(layer.o_proj, linear(w.o_proj, {h, q}, "self_attn.o_proj"));
  PAGELLM_ASSIGN_OR_RETURN(layer.q_norm, FoldedNorm(w.q_norm, c.head_dim, p + "self_attn.q_norm"));
  PAGELLM_ASSIGN_OR_RETURN(layer.k_norm, FoldedNorm(w.k_norm, c.head_dim, p + "self_attn.k_norm"));
  return OkStatus();
}

Status HybridModel::PrepareGdn(const LayerWeights& w, const std::string& p, Layer& layer) {
  const ModelConfig& c = config_;
  const GdnDims& d = gdn_dims_;
  const int64_t h = c.hidden_size, nv = d.num_v_heads, vd = d.value_dim(), conv = d.conv_dim();
  TensorView qkv = w.gdn_in_proj_qkv, z = w.gdn_in_proj_z, b = w.gdn_in_proj_b, a = w.gdn_in_proj_a;
  if (c.grouped_gdn_projections) {  // Qwen3-Next: un-group the fused rows once
    PAGELLM_RETURN_IF_ERROR(CheckWeightShape(w.gdn_in_proj_qkvz, {conv + vd, h}, p + "linear_attn.in_proj_qkvz"));
    PAGELLM_RETURN_IF_ERROR(CheckWeightShape(w.gdn_in_proj_ba, {2 * nv, h}, p + "linear_attn.in_proj_ba"));
    TensorView qkvz = PermuteRows(w.gdn_in_proj_qkvz, Qwen3NextQkvzSourceIndex(d), owned_weights_);
    TensorView ba = PermuteRows(w.gdn_in_proj_ba, Qwen3NextBaSourceIndex(d), owned_weights_);
    qkv = RowRange(qkvz, 0, conv);
    z = RowRange(qkvz, conv, vd);
    b = RowRange(ba, 0, nv);
    a = RowRange(ba, nv, nv);
  }
  auto linear = [&](const TensorView& t, std::vector<int64_t> shape,
                    const std::string& name) -> StatusOr<std::unique_ptr<LinearWeight>> {
    PAGELLM_RETURN_IF_ERROR(CheckWeightShape(t, shape, p + name));
    return backend_.PrepareLinear(t, TensorView{}, linear_options_);
  };
  PAGELLM_ASSIGN_OR_RETURN(layer.in_qkv, linear(qkv, {conv, h}, "linear_attn.in_proj_qkv"));
  PAGELLM_ASSIGN_OR_RETURN(layer.in_z, linear(z, {vd, h}, "linear_attn.in_proj_z"));
  PAGELLM_ASSIGN_OR_RETURN(layer.in_b, linear(b, {nv, h}, "linear_attn.in_proj_b"));
  PAGELLM_ASSIGN_OR_RETURN(layer.in_a, linear(a, {nv, h}, "linear_attn.in_proj_a"));
  PAGELLM_ASSIGN_OR_RETURN(layer.out_proj, linear(w.gdn_out_proj, {h, vd}, "linear_attn.out_proj"));
  // conv1d [conv_dim, 1, K] is read as [conv_dim, K] (same bytes).
  PAGELLM_ASSIGN_OR_RETURN(layer.conv_weight,
                           WeightToF32(w.gdn_conv1d, {conv, 1, d.conv_kernel}, p + "linear_attn.conv1d"));
  PAGELLM_ASSIGN_OR_RETURN(layer.a_log, WeightToF32(w.gdn_a_log, {nv}, p + "linear_attn.A_log"));
  PAGELLM_ASSIGN_OR_RETURN(layer.dt_bias, WeightToF32(w.gdn_dt_bias, {nv}, p + "linear_attn.dt_bias"));
  PAGELLM_ASSIGN_OR_RETURN(layer.gdn_norm, WeightToF32(w.gdn_norm, {d.v_head_dim}, p + "linear_attn.norm"));
  return OkStatus();
}

Status HybridModel::PrepareFfn(const LayerWeights& w, bool moe, const std::string& p, Layer& layer) {
  const ModelConfig& c = config_;
  if (moe) {
    PAGELLM_ASSIGN_OR_RETURN(layer.moe, MoeBlock::Create(c, w, backend_, max_num_tokens_, p));
    return OkStatus();
  }
  const int64_t h = c.hidden_size, inter = c.intermediate_size;
  PAGELLM_RETURN_IF_ERROR(CheckWeightShape(w.gate_proj, {inter, h}, p + "mlp.gate_proj"));
  PAGELLM_RETURN_IF_ERROR(CheckWeightShape(w.up_proj, {inter, h}, p + "mlp.up_proj"));
  PAGELLM_RETURN_IF_ERROR(CheckWeightShape(w.down_proj, {h, inter}, p + "mlp.down_proj"));
  const TensorView gate_up[] = {w.gate_proj, w.up_proj}, no_bias[2] = {};
  PAGELLM_ASSIGN_OR_RETURN(layer.gate_up_proj, backend_.PrepareStackedLinear(gate_up, no_bias, linear_options_));
  if (layer.gate_up_proj == nullptr) {
    PAGELLM_ASSIGN_OR_RETURN(layer.gate_proj, backend_.PrepareLinear(w.gate_proj, TensorView{}, linear_options_));
    PAGELLM_ASSIGN_OR_RETURN(layer.up_proj, backend_.PrepareLinear(w.up_proj, TensorView{}, linear_options_));
  }
  PAGELLM_ASSIGN_OR_RETURN(layer.down_proj, backend_.PrepareLinear(w.down_proj, TensorView{}, linear_options_));
  return OkStatus();
}

void HybridModel::AllocateWorkspace() {
  const ModelConfig& c = config_;
  const size_t t = static_cast<size_t>(max_num_tokens_);
  const size_t h = static_cast<size_t>(c.hidden_size), q = static_cast<size_t>(c.q_size());
  const size_t kv = static_cast<size_t>(c.kv_size()), inter = static_cast<size_t>(std::max<int64_t>(c.intermediate_size, 1));
  hidden_.resize(t * h);
  normed_.resize(t * h);
  proj_.resize(t * h);
  qg_.resize(t * 2 * q);
  q_.resize(t * q);
  gate_.resize(t * q);
  attn_.resize(t * q);
  k_.resize(t * kv);
  v_.resize(t * kv);
  mlp_gate_.resize(t * inter);
  mlp_up_.resize(t * inter);
  mixed_.resize(t * static_cast<size_t>(gdn_dims_.conv_dim()));
  z_.resize(t * static_cast<size_t>(gdn_dims_.value_dim()));
  gdn_y_.resize(t * static_cast<size_t>(gdn_dims_.value_dim()));
  b_.resize(t * static_cast<size_t>(gdn_dims_.num_v_heads));
  a_.resize(t * static_cast<size_t>(gdn_dims_.num_v_heads));
  gdn_ws_ = std::make_unique<GdnMixerWorkspace>(gdn_dims_, max_num_tokens_);
  if (has_mtp()) {
    mtp_concat_.resize(t * 2 * h);
    captured_.resize(t * h);
  }
}

KvCacheSpec HybridModel::MakeMtpKvCacheSpec(int64_t num_blocks, int64_t block_size, DType dtype) const {
  KvCacheSpec spec = MakeKvCacheSpec(num_blocks, block_size, dtype);
  spec.num_layers = static_cast<int64_t>(mtp_layers_.size());
  return spec;
}

KvCacheSpec HybridModel::MakeKvCacheSpec(int64_t num_blocks, int64_t block_size, DType dtype) const {
  return KvCacheSpec{.num_layers = num_full_, .num_blocks = num_blocks,
                     .block_size = block_size, .num_kv_heads = config_.num_key_value_heads,
                     .head_dim = config_.head_dim, .dtype = dtype};
}

HybridStateSpec HybridModel::MakeStateSpec(int64_t num_slots) const {
  return HybridStateSpec{.num_slots = num_slots,
                         .num_gdn_layers = num_gdn_,
                         .dims = gdn_dims_};
}

void HybridModel::RunAttention(const Layer& layer, const ForwardInput& in, PagedKvCache& kv) {
  const ModelConfig& c = config_;
  const int64_t t = in.num_tokens(), nh = c.num_attention_heads, nkv = c.num_key_value_heads, hd = c.head_dim;
  const float eps = static_cast<float>(c.rms_norm_eps);
  backend_.Linear(*layer.q_proj, normed_.data(), t, qg_.data());  // [T, nh, 2*hd], per head [q | gate]
  SplitQueryGate(qg_.data(), t, nh, hd, q_.data(), gate_.data());
  backend_.Linear(*layer.k_proj, normed_.data(), t, k_.data());  // [T, nkv*hd]
  backend_.Linear(*layer.v_proj, normed_.data(), t, v_.data());
  backend_.RmsNorm(q_.data(), layer.q_norm.data(), t * nh, hd, eps, q_.data());
  backend_.RmsNorm(k_.data(), layer.k_norm.data(), t * nkv, hd, eps, k_.data());
  backend_.Rope(rope_, in.positions, nh, hd, q_.data());  // rotates the first rotary_dim dims only
  backend_.Rope(rope_, in.positions, nkv, hd, k_.data());
  const KvLayerView cache = kv.layer(layer.cache_idx);
  backend_.WriteKv(k_.data(), v_.data(), in.slot_mapping, cache);
  AttentionBatch batch{.query_start_loc = in.query_start_loc, .seq_lens = in.seq_lens,
                       .block_tables = in.block_tables, .max_blocks_per_seq = in.max_blocks_per_seq};
  AttentionDims dims{.num_heads = nh, .num_kv_heads = nkv, .head_dim = hd,
                     .scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)))};
  backend_.PagedAttention(q_.data(), cache, batch, dims, attn_.data());  // [T, nh*hd]
  ApplySigmoidGate(gate_.data(), t * nh * hd, attn_.data());
  backend_.Linear(*layer.o_proj, attn_.data(), t, proj_.data());
}

void HybridModel::RunGdn(const Layer& layer, const ForwardInput& in, HybridStateCache& states) {
  const int64_t t = in.num_tokens(), conv = gdn_dims_.conv_dim(), vd = gdn_dims_.value_dim();
  const int64_t nv = gdn_dims_.num_v_heads;
  backend_.Linear(*layer.in_qkv, normed_.data(), t, mixed_.data());  // [T, conv_dim] = [q | k | v]
  backend_.Linear(*layer.in_z, normed_.data(), t, z_.data());        // [T, nv*dv]
  backend_.Linear(*layer.in_b, normed_.data(), t, b_.data());        // [T, nv]
  backend_.Linear(*layer.in_a, normed_.data(), t, a_.data());        // [T, nv]
  const GdnLayerWeights weights{.conv_weight = layer.conv_weight.data(), .a_log = layer.a_log.data(),
                                .dt_bias = layer.dt_bias.data(), .norm_weight = layer.gdn_norm.data(),
                                .norm_eps = static_cast<float>(config_.rms_norm_eps)};
  for (int32_t s = 0; s < in.num_seqs(); ++s) {
    const int64_t q0 = in.query_start_loc[s], n = in.query_start_loc[s + 1] - q0;
    if (n == 0) continue;
    const GdnProjections proj{.mixed = mixed_.data() + q0 * conv, .z = z_.data() + q0 * vd,
                              .b = b_.data() + q0 * nv, .a = a_.data() + q0 * nv};
    GdnMixerForward(gdn_dims_, weights, n, proj, states.Get(in.state_slots[s], layer.cache_idx), *gdn_ws_,
                    gdn_y_.data() + q0 * vd);
  }
  backend_.Linear(*layer.out_proj, gdn_y_.data(), t, proj_.data());  // [T, H]
}

Status HybridModel::AllReduce(int64_t num_tokens) {
  if (par_.tp.comm == nullptr) return OkStatus();
  return par_.tp.comm->AllReduceSum(proj_.data(), num_tokens * config_.hidden_size, DType::kF32);
}

Status HybridModel::RunFfn(const Layer& layer, int64_t t) {
  const ModelConfig& c = config_;
  backend_.RmsNorm(hidden_.data(), layer.post_norm.data(), t, c.hidden_size, static_cast<float>(c.rms_norm_eps),
                   normed_.data());
  if (layer.moe) {
    layer.moe->Forward(normed_.data(), t, proj_.data());
  } else {
    if (layer.gate_up_proj != nullptr) {
      float* const gate_up[] = {mlp_gate_.data(), mlp_up_.data()};
      backend_.LinearStacked(*layer.gate_up_proj, normed_.data(), t, gate_up);
    } else {
      backend_.Linear(*layer.gate_proj, normed_.data(), t, mlp_gate_.data());
      backend_.Linear(*layer.up_proj, normed_.data(), t, mlp_up_.data());
    }
    backend_.SiluMul(mlp_gate_.data(), mlp_up_.data(), t * c.intermediate_size, mlp_gate_.data());
    backend_.Linear(*layer.down_proj, mlp_gate_.data(), t, proj_.data());
  }
  PAGELLM_RETURN_IF_ERROR(AllReduce(t));
  backend_.AddInPlace(proj_.data(), t * c.hidden_size, hidden_.data());
  return OkStatus();
}

Status HybridModel::Forward(const ForwardInput& input, PagedKvCache& kv, HybridStateCache& states, float* logits) {
  PAGELLM_RETURN_IF_ERROR(ValidateInput(input, kv, states));
  const int64_t t = input.num_tokens(), h = config_.hidden_size;
  const float eps = static_cast<float>(config_.rms_norm_eps);
  // A sequence whose first new token sits at position 0 starts fresh.
  for (int32_t s = 0; s < input.num_seqs(); ++s) {
    const int32_t q0 = input.query_start_loc[s];
    if (input.query_start_loc[s + 1] > q0 && input.positions[q0] == 0) states.ResetSlot(input.state_slots[s]);
  }
  const int64_t num_logits = static_cast<int64_t>(input.logits_indices.size());
  if (par_.stage == nullptr || par_.stage->first()) {
    backend_.Embedding(embed_tokens_, input.token_ids, hidden_.data());
  } else {
    PAGELLM_RETURN_IF_ERROR(par_.stage->ReceiveHidden(hidden_.data(), t * h));
  }
  for (const Layer& layer : layers_) {
    backend_.RmsNorm(hidden_.data(), layer.input_norm.data(), t, h, eps, normed_.data());
    if (layer.full_attention) {
      RunAttention(layer, input, kv);
    } else {
      RunGdn(layer, input, states);
    }
    PAGELLM_RETURN_IF_ERROR(AllReduce(t));
    backend_.AddInPlace(proj_.data(), t * h, hidden_.data());
    PAGELLM_RETURN_IF_ERROR(RunFfn(layer, t));
  }
  if (par_.stage != nullptr && !par_.stage->last()) {
    return par_.stage->SendHidden(hidden_.data(), t * h, logits, num_logits * config_.vocab_size);
  }
  if (has_mtp()) {  // the MTP head's hidden_in: every row, final-normed
    backend_.RmsNorm(hidden_.data(), final_norm_.data(), t, h, eps, captured_.data());
    captured_rows_ = t;
  }
  if (par_.stage != nullptr) logits = par_.stage->LogitsBuffer(logits, num_logits * config_.vocab_size);
  PAGELLM_RETURN_IF_ERROR(RunHead(input, logits));
  return par_.stage != nullptr ? par_.stage->SendLogits(num_logits * config_.vocab_size) : OkStatus();
}

Status HybridModel::ForwardMtp(const ForwardInput& input, const float* hidden_in, int32_t step, PagedKvCache& kv,
                               float* hidden_out, float* logits) {
  if (!has_mtp()) return FailedPreconditionError("HybridModel: no MTP head was loaded");
  const KvCacheSpec& spec = kv.spec();
  if (spec.num_layers != static_cast<int64_t>(mtp_layers_.size()) ||
      spec.num_kv_heads != config_.num_key_value_heads || spec.head_dim != config_.head_dim) {
    return InvalidArgumentError("KV cache does not match the MTP head's layers");
  }
  ForwardLimits limits{.max_num_tokens = max_num_tokens_, .vocab_size = config_.vocab_size,
                       .max_positions = rope_.max_positions, .num_blocks = spec.num_blocks,
                       .block_size = spec.block_size};
  PAGELLM_RETURN_IF_ERROR(ValidateForwardInput(input, limits));
  const int64_t t = input.num_tokens(), h = config_.hidden_size;
  const float eps = static_cast<float>(config_.rms_norm_eps);
  backend_.Embedding(embed_tokens_, input.token_ids, normed_.data());
  backend_.RmsNorm(normed_.data(), mtp_norm_embedding_.data(), t, h, eps, normed_.data());
  backend_.RmsNorm(hidden_in, mtp_norm_hidden_.data(), t, h, eps, proj_.data());
  const size_t row_bytes = static_cast<size_t>(h) * sizeof(float);
  for (int64_t r = 0; r < t; ++r) {  // fc input: [embedding | hidden], vLLM's concat order
    std::memcpy(mtp_concat_.data() + r * 2 * h, normed_.data() + r * h, row_bytes);
    std::memcpy(mtp_concat_.data() + r * 2 * h + h, proj_.data() + r * h, row_bytes);
  }
  backend_.Linear(*mtp_fc_, mtp_concat_.data(), t, hidden_.data());
  const Layer& layer = mtp_layers_[static_cast<size_t>(step) % mtp_layers_.size()];
  backend_.RmsNorm(hidden_.data(), layer.input_norm.data(), t, h, eps, normed_.data());
  RunAttention(layer, input, kv);
  backend_.AddInPlace(proj_.data(), t * h, hidden_.data());
  PAGELLM_RETURN_IF_ERROR(RunFfn(layer, t));
  backend_.RmsNorm(hidden_.data(), mtp_norm_.data(), t, h, eps, hidden_out);
  const int64_t num_logits = static_cast<int64_t>(input.logits_indices.size());
  for (int64_t r = 0; r < num_logits; ++r) {
    std::memcpy(normed_.data() + r * h, hidden_out + int64_t{input.logits_indices[static_cast<size_t>(r)]} * h,
                row_bytes);
  }
  if (num_logits > 0) backend_.Linear(*lm_head_, normed_.data(), num_logits, logits);
  return OkStatus();
}

Status HybridModel::RunHead(const ForwardInput& input, float* logits) {
  const int64_t h = config_.hidden_size;
  const float eps = static_cast<float>(config_.rms_norm_eps);
  const int64_t num_logits = static_cast<int64_t>(input.logits_indices.size());
  for (int64_t r = 0; r < num_logits; ++r) {
    std::memcpy(normed_.data() + r * h, hidden_.data() + int64_t{input.logits_indices[static_cast<size_t>(r)]} * h,
                static_cast<size_t>(h) * sizeof(float));
  }
  backend_.RmsNorm(normed_.data(), final_norm_.data(), num_logits, h, eps, normed_.data());
  if (par_.head != nullptr) return par_.head->Run(backend_, *lm_head_, normed_.data(), num_logits, h, logits);
  if (num_logits > 0) backend_.Linear(*lm_head_, normed_.data(), num_logits, logits);
  return OkStatus();
}

Status HybridModel::ValidateInput(const ForwardInput& input, const PagedKvCache& kv,
                                  const HybridStateCache& states) const {
  const KvCacheSpec& spec = kv.spec();
  if (spec.num_layers != num_full_ || spec.num_kv_heads != config_.num_key_value_heads ||
      spec.head_dim != config_.head_dim) {
    return InvalidArgumentError("KV cache does not match the hybrid model's full-attention layers");
  }
  const HybridStateSpec want = MakeStateSpec(1);
  if (states.spec().num_gdn_layers != want.num_gdn_layers ||
      states.spec().floats_per_layer() != want.floats_per_layer()) {
    return InvalidArgumentError("HybridStateCache does not match the model's GDN layers");
  }
  if (input.state_slots.size() != static_cast<size_t>(input.num_seqs())) {
    return InvalidArgumentError(fmt::format("state_slots has {} entries for {} sequences", input.state_slots.size(),
                                            input.num_seqs()));
  }
  std::set<int32_t> seen;
  for (int32_t slot : input.state_slots) {
    if (slot < 0 || slot >= states.num_slots() || !seen.insert(slot).second) {
      return InvalidArgumentError(fmt::format("state slot {} is out of range [0, {}) or repeated", slot,
                                              states.num_slots()));
    }
  }
  ForwardLimits limits{.max_num_tokens = max_num_tokens_, .vocab_size = config_.vocab_size,
                       .max_positions = rope_.max_positions, .num_blocks = spec.num_blocks,
                       .block_size = spec.block_size};
  return ValidateForwardInput(input, limits);
}

}  // namespace pagellm
