#include "model/shard_plan.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/mapped_file.h"
#include "model/tensor_source.h"

namespace pagellm {
namespace {

int64_t RowElements(const TensorView& t) {
  int64_t n = 1;
  for (size_t i = 1; i < t.shape.size(); ++i) n *= t.shape[i];
  return n;
}

// Rows [begin, begin + rows) of a row-major tensor (dimension 0), as a view.
TensorView RowSlice(const TensorView& t, int64_t begin, int64_t rows) {
  if (t.empty()) return t;
  TensorView out = t;
  out.data = static_cast<std::byte*>(t.data) + DTypeBytes(t.dtype, begin * RowElements(t));
  out.shape[0] = rows;
  return out;
}

// Rows [begin, begin + rows) of matrix `outer` of a 3-D tensor [N, R, C], as [rows, C].
TensorView ExpertRows(const TensorView& t, int64_t outer, int64_t begin, int64_t rows) {
  TensorView v = t;
  v.data = static_cast<std::byte*>(t.data) + DTypeBytes(t.dtype, (outer * t.shape[1] + begin) * t.shape[2]);
  v.shape = {rows, t.shape[2]};
  return v;
}

// The rows of several ranges of dimension 0, concatenated into one copy (Qwen3.5's
// in_proj_qkv and conv1d hold a rank's q, k and v rows in three places).
TensorView GatherRowRanges(const TensorView& t, const std::vector<std::pair<int64_t, int64_t>>& ranges,
                           ModelWeights& out) {
  const size_t row_bytes = DTypeBytes(t.dtype, RowElements(t));
  int64_t rows = 0;
  for (const auto& [begin, n] : ranges) rows += n;
  std::shared_ptr<void> buffer = AllocateAligned(row_bytes * static_cast<size_t>(rows));
  auto* dst = static_cast<std::byte*>(buffer.get());
  for (const auto& [begin, n] : ranges) {
    std::memcpy(dst, static_cast<const std::byte*>(t.data) + row_bytes * static_cast<size_t>(begin),
                row_bytes * static_cast<size_t>(n));
    dst += row_bytes * static_cast<size_t>(n);
  }
  TensorView v = t;
  v.data = buffer.get();
  v.shape[0] = rows;
  out.storage.push_back(std::move(buffer));
  return v;
}

// Columns [begin, begin + cols) of a 2-D tensor, copied (a column slice is strided).
// Block-quantized types: the bounds must fall on whole blocks.
StatusOr<TensorView> ColumnSlice(const TensorView& t, int64_t begin, int64_t cols, ModelWeights& out,
                                 const std::string& name) {
  if (!t.column_order.empty()) {
    // The stored columns are in another order than the input's (GPTQ act-order, a k-quant
    // GGUF's reordered GDN out_proj): a rank's input columns are scattered over the
    // quantization blocks, which a column slice cannot keep whole.
    return InvalidArgumentError(fmt::format("{}: a weight stored with reordered input columns (GPTQ act-order, or a "
                                            "k-quant GGUF's Gated DeltaNet out_proj) cannot be split by input columns "
                                            "across tensor-parallel ranks; use --tensor-parallel-size 1", name));
  }
  const int64_t block = DTypeBlockSize(t.dtype);
  if (begin % block != 0 || cols % block != 0) {
    return InvalidArgumentError(fmt::format("{}: a column shard [{}, {}) does not fall on {}-element blocks", name,
                                            begin, begin + cols, block));
  }
  const int64_t rows = t.shape[0], width = t.shape[1];
  const size_t row_bytes = DTypeBytes(t.dtype, width), off = DTypeBytes(t.dtype, begin), n = DTypeBytes(t.dtype, cols);
  std::shared_ptr<void> buffer = AllocateAligned(n * static_cast<size_t>(rows));
  const auto* src = static_cast<const std::byte*>(t.data);
  auto* dst = static_cast<std::byte*>(buffer.get());
  for (int64_t r = 0; r < rows; ++r) std::memcpy(dst + r * n, src + r * row_bytes + off, n);
  // Another rank may still read the file pages; dropping ours only unmaps this process's copy.
  MappedFile::ReleasePages(t.data, t.nbytes());
  TensorView v = t;
  v.data = buffer.get();
  v.shape = {rows, cols};
  out.storage.push_back(std::move(buffer));
  return v;
}

TensorView Zeros(const TensorView& t, ModelWeights& out) {
  std::shared_ptr<void> buffer = AllocateAligned(t.nbytes());
  std::memset(buffer.get(), 0, t.nbytes());
  TensorView v = t;
  v.data = buffer.get();
  out.storage.push_back(std::move(buffer));
  return v;
}

// Which KV heads rank `r` holds: a contiguous range, or one replicated head.
struct KvHeads {
  int64_t begin, count;
};
KvHeads KvHeadsOf(int64_t nkv, int r, int n) {
  if (nkv >= n) return {r * (nkv / n), nkv / n};
  return {r / (n / nkv), 1};
}

// Query heads by rank; a hybrid model's gated q_proj holds per head [q | gate] (2 hd rows).
Status ShardAttention(const ModelConfig& c, const LayerWeights& in, ShardSpec s, LayerWeights& l, ModelWeights& out,
                      const std::string& p) {
  const int64_t hd = c.head_dim, nh_l = c.num_attention_heads / s.size;
  const int64_t q_rows_per_head = c.gated_attention ? 2 * hd : hd;
  const KvHeads kv = KvHeadsOf(c.num_key_value_heads, s.rank, s.size);
  l.q_proj = RowSlice(in.q_proj, s.rank * nh_l * q_rows_per_head, nh_l * q_rows_per_head);
  l.q_bias = RowSlice(in.q_bias, s.rank * nh_l * hd, nh_l * hd);
  l.k_proj = RowSlice(in.k_proj, kv.begin * hd, kv.count * hd);
  l.k_bias = RowSlice(in.k_bias, kv.begin * hd, kv.count * hd);
  l.v_proj = RowSlice(in.v_proj, kv.begin * hd, kv.count * hd);
  l.v_bias = RowSlice(in.v_bias, kv.begin * hd, kv.count * hd);
  PAGELLM_ASSIGN_OR_RETURN(l.o_proj, ColumnSlice(in.o_proj, s.rank * nh_l * hd, nh_l * hd, out, p + "o_proj"));
  // The bias is added once to the sum: rank 0 keeps it, the others add zeros.
  if (!in.o_bias.empty() && s.rank != 0) l.o_bias = Zeros(in.o_bias, out);
  return OkStatus();
}

// Gated DeltaNet by key heads: rank r holds key heads [r nk/N, (r+1) nk/N) and the value
// heads that read them ([r nv/N, (r+1) nv/N) in HF's grouped order), their conv channels,
// gates and recurrent state; out_proj the matching columns.
Status ShardGdn(const ModelConfig& c, const LayerWeights& in, ShardSpec s, LayerWeights& l, ModelWeights& out,
                const std::string& p) {
  const int64_t dk = c.linear_key_head_dim, dv = c.linear_value_head_dim;
  const int64_t nk_l = c.linear_num_key_heads / s.size, nv_l = c.linear_num_value_heads / s.size;
  const int64_t r = s.rank;
  if (c.grouped_gdn_projections) {
    // Qwen3-Next: one contiguous row group per key head ([q | k | v | z], then [b | a]).
    const int64_t qkvz_group = 2 * dk + 2 * (nv_l / nk_l) * dv, ba_group = 2 * (nv_l / nk_l);
    l.gdn_in_proj_qkvz = RowSlice(in.gdn_in_proj_qkvz, r * nk_l * qkvz_group, nk_l * qkvz_group);
    l.gdn_in_proj_ba = RowSlice(in.gdn_in_proj_ba, r * nk_l * ba_group, nk_l * ba_group);
  } else {
    const std::vector<std::pair<int64_t, int64_t>> qkv = {{r * nk_l * dk, nk_l * dk},
                                                          {c.linear_key_dim() + r * nk_l * dk, nk_l * dk},
                                                          {2 * c.linear_key_dim() + r * nv_l * dv, nv_l * dv}};
    l.gdn_in_proj_qkv = GatherRowRanges(in.gdn_in_proj_qkv, qkv, out);
    l.gdn_in_proj_z = RowSlice(in.gdn_in_proj_z, r * nv_l * dv, nv_l * dv);
    l.gdn_in_proj_b = RowSlice(in.gdn_in_proj_b, r * nv_l, nv_l);
    l.gdn_in_proj_a = RowSlice(in.gdn_in_proj_a, r * nv_l, nv_l);
  }
  // conv1d runs over the flat [q | k | v] channels in both layouts.
  l.gdn_conv1d = GatherRowRanges(in.gdn_conv1d,
                                 {{r * nk_l * dk, nk_l * dk},
                                  {c.linear_key_dim() + r * nk_l * dk, nk_l * dk},
                                  {2 * c.linear_key_dim() + r * nv_l * dv, nv_l * dv}},
                                 out);
  l.gdn_dt_bias = RowSlice(in.gdn_dt_bias, r * nv_l, nv_l);
  l.gdn_a_log = RowSlice(in.gdn_a_log, r * nv_l, nv_l);
  PAGELLM_ASSIGN_OR_RETURN(l.gdn_out_proj,
                           ColumnSlice(in.gdn_out_proj, r * nv_l * dv, nv_l * dv, out, p + "linear_attn.out_proj"));
  return OkStatus();
}

// A SwiGLU block by intermediate columns: gate/up rows [r I/N, (r+1) I/N), down columns.
struct SwiGlu {
  TensorView gate, up, down;
};
StatusOr<SwiGlu> ShardSwiGlu(const TensorView& gate, const TensorView& up, const TensorView& down, int64_t inter,
                             ShardSpec s, ModelWeights& out, const std::string& name) {
  const int64_t i_l = inter / s.size;
  SwiGlu g{RowSlice(gate, s.rank * i_l, i_l), RowSlice(up, s.rank * i_l, i_l), {}};
  PAGELLM_ASSIGN_OR_RETURN(g.down, ColumnSlice(down, s.rank * i_l, i_l, out, name + "down_proj"));
  return g;
}

Status ShardMlp(const ModelConfig& c, const LayerWeights& in, ShardSpec s, LayerWeights& l, ModelWeights& out,
                const std::string& p) {
  PAGELLM_ASSIGN_OR_RETURN(SwiGlu g, ShardSwiGlu(in.gate_proj, in.up_proj, in.down_proj, c.intermediate_size, s, out, p));
  l.gate_proj = g.gate;
  l.up_proj = g.up;
  l.down_proj = g.down;
  return OkStatus();
}

// MoE within experts: every rank holds every expert's share of its intermediate columns
// (and of the shared expert's); the router and the shared-expert gate are replicated, so
// routing is identical on every rank and the block's output is a partial sum like the
// dense MLP's. Fused 3-D expert tensors become per-expert 2-D slices.
Status ShardMoe(const ModelConfig& c, const LayerWeights& in, ShardSpec s, LayerWeights& l, ModelWeights& out,
                const std::string& p) {
  const int64_t ie = c.moe_intermediate_size, h = c.hidden_size;
  l.expert_gate_proj.assign(static_cast<size_t>(c.num_experts), {});
  l.expert_up_proj.assign(static_cast<size_t>(c.num_experts), {});
  l.expert_down_proj.assign(static_cast<size_t>(c.num_experts), {});
  for (int64_t e = 0; e < c.num_experts; ++e) {
    const size_t i = static_cast<size_t>(e);
    const TensorView gate = c.fused_experts ? ExpertRows(in.experts_gate_up, e, 0, ie) : in.expert_gate_proj[i];
    const TensorView up = c.fused_experts ? ExpertRows(in.experts_gate_up, e, ie, ie) : in.expert_up_proj[i];
    const TensorView down = c.fused_experts ? ExpertRows(in.experts_down, e, 0, h) : in.expert_down_proj[i];
    PAGELLM_ASSIGN_OR_RETURN(SwiGlu g, ShardSwiGlu(gate, up, down, ie, s, out, fmt::format("{}mlp.experts.{}.", p, e)));
    l.expert_gate_proj[i] = g.gate;
    l.expert_up_proj[i] = g.up;
    l.expert_down_proj[i] = g.down;
  }
  l.experts_gate_up = {};
  l.experts_down = {};
  if (c.shared_expert_intermediate_size > 0) {
    PAGELLM_ASSIGN_OR_RETURN(SwiGlu g, ShardSwiGlu(in.shared_gate_proj, in.shared_up_proj, in.shared_down_proj,
                                                   c.shared_expert_intermediate_size, s, out, p + "mlp.shared_expert."));
    l.shared_gate_proj = g.gate;
    l.shared_up_proj = g.up;
    l.shared_down_proj = g.down;
  }
  return OkStatus();
}

int64_t ViewBytes(const TensorView& v) { return v.empty() ? 0 : static_cast<int64_t>(v.nbytes()); }

int64_t ShardBytes(const ModelWeights& w) {
  int64_t total = ViewBytes(w.embed_tokens) + ViewBytes(w.norm);
  const auto* embed = static_cast<const std::byte*>(w.embed_tokens.data);
  const auto* head = static_cast<const std::byte*>(w.lm_head.data);
  const bool head_in_embed = head >= embed && head < embed + w.embed_tokens.nbytes();
  if (!head_in_embed) total += ViewBytes(w.lm_head);
  for (const LayerWeights& l : w.layers) {
    for (const TensorView* v :
         {&l.input_layernorm, &l.q_proj, &l.k_proj, &l.v_proj, &l.q_bias, &l.k_bias, &l.v_bias, &l.o_proj, &l.o_bias,
          &l.q_norm, &l.k_norm, &l.post_attention_layernorm, &l.gate_proj, &l.up_proj, &l.down_proj,
          &l.gdn_in_proj_qkv, &l.gdn_in_proj_z, &l.gdn_in_proj_b, &l.gdn_in_proj_a, &l.gdn_in_proj_qkvz,
          &l.gdn_in_proj_ba, &l.gdn_conv1d, &l.gdn_dt_bias, &l.gdn_a_log, &l.gdn_norm, &l.gdn_out_proj, &l.moe_router,
          &l.experts_gate_up, &l.experts_down, &l.shared_gate_proj, &l.shared_up_proj, &l.shared_down_proj,
          &l.shared_expert_gate}) {
      total += ViewBytes(*v);
    }
    for (const auto* experts : {&l.expert_gate_proj, &l.expert_up_proj, &l.expert_down_proj}) {
      for (const TensorView& v : *experts) total += ViewBytes(v);
    }
  }
  return total;
}

bool HasDenseLayer(const ModelConfig& c) {
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    if (!c.IsMoeLayer(l)) return true;
  }
  return false;
}

}  // namespace

LayerRange StageLayers(int64_t num_layers, int stage, int num_stages) {
  return LayerRange{.first = num_layers * stage / num_stages, .end = num_layers * (stage + 1) / num_stages};
}

StageLoad StageLoadOf(const ModelConfig& c, LayerRange layers) {
  StageLoad load;
  for (int64_t l = layers.first; l < layers.end; ++l) {
    (!c.is_hybrid() || c.IsFullAttentionLayer(l) ? load.attention_layers : load.gdn_layers) += 1;
  }
  return load;
}

StageLoad LargestStage(const ModelConfig& c, int num_stages) {
  StageLoad most;
  for (int s = 0; s < num_stages; ++s) {
    const StageLoad load = StageLoadOf(c, StageLayers(c.num_hidden_layers, s, num_stages));
    most.attention_layers = std::max(most.attention_layers, load.attention_layers);
    most.gdn_layers = std::max(most.gdn_layers, load.gdn_layers);
  }
  return most;
}

Status CheckShardable(const ModelConfig& c, int n, int num_stages) {
  if (n < 1) return InvalidArgumentError(fmt::format("tensor parallel size must be >= 1, got {}", n));
  if (num_stages < 1 || num_stages > c.num_hidden_layers) {
    return InvalidArgumentError(fmt::format("--pipeline-parallel-size {} must be in [1, num_hidden_layers {}]",
                                            num_stages, c.num_hidden_layers));
  }
  if (n == 1) return OkStatus();
  auto divides = [&](int64_t value, const char* what) -> Status {
    if (value % n == 0) return OkStatus();
    return InvalidArgumentError(fmt::format("--tensor-parallel-size {} does not divide {} ({})", n, what, value));
  };
  PAGELLM_RETURN_IF_ERROR(divides(c.num_attention_heads, "num_attention_heads"));
  if (HasDenseLayer(c)) PAGELLM_RETURN_IF_ERROR(divides(c.intermediate_size, "intermediate_size"));
  PAGELLM_RETURN_IF_ERROR(divides(c.vocab_size, "vocab_size"));
  if (c.is_moe()) {
    PAGELLM_RETURN_IF_ERROR(divides(c.moe_intermediate_size, "moe_intermediate_size"));
    PAGELLM_RETURN_IF_ERROR(divides(c.shared_expert_intermediate_size, "shared_expert_intermediate_size"));
  }
  if (c.is_hybrid()) {
    // Key heads are split; each rank's value heads are those reading its key heads.
    PAGELLM_RETURN_IF_ERROR(divides(c.linear_num_key_heads, "linear_num_key_heads"));
    PAGELLM_RETURN_IF_ERROR(divides(c.linear_num_value_heads, "linear_num_value_heads"));
  }
  const int64_t nkv = c.num_key_value_heads;
  if (nkv % n != 0 && n % nkv != 0) {
    return InvalidArgumentError(fmt::format("--tensor-parallel-size {} and num_key_value_heads {}: one must divide the "
                                            "other (KV heads are split, or replicated when fewer than ranks)", n, nkv));
  }
  return OkStatus();
}

StatusOr<ShardedModel> ShardModel(const ModelConfig& config, const ModelWeights& weights, ShardSpec spec) {
  PAGELLM_RETURN_IF_ERROR(CheckShardable(config, spec.size, spec.num_stages));
  if (spec.rank < 0 || spec.rank >= spec.size || spec.stage < 0 || spec.stage >= spec.num_stages) {
    return InvalidArgumentError(fmt::format("shard rank {} of {} / stage {} of {} is out of range", spec.rank,
                                            spec.size, spec.stage, spec.num_stages));
  }
  ShardedModel s;
  s.config = config;
  s.weights = weights;  // shares the storage; the sliced views replace the full ones below
  const int n = spec.size;
  s.config.num_attention_heads = config.num_attention_heads / n;
  s.config.num_key_value_heads = KvHeadsOf(config.num_key_value_heads, spec.rank, n).count;
  s.config.intermediate_size = config.intermediate_size / n;
  s.config.moe_intermediate_size = config.moe_intermediate_size / n;
  s.config.shared_expert_intermediate_size = config.shared_expert_intermediate_size / n;
  s.config.linear_num_key_heads = config.linear_num_key_heads / n;
  s.config.linear_num_value_heads = config.linear_num_value_heads / n;
  s.config.fused_experts = false;  // ShardMoe hands out per-expert slices
  s.layers = StageLayers(config.num_hidden_layers, spec.stage, spec.num_stages);
  s.lm_head_rows = config.vocab_size / n;
  s.vocab_begin = spec.rank * s.lm_head_rows;
  const TensorView& head = weights.lm_head.empty() ? weights.embed_tokens : weights.lm_head;
  const bool last_stage = spec.stage == spec.num_stages - 1;
  s.weights.lm_head = last_stage ? RowSlice(head, s.vocab_begin, s.lm_head_rows) : TensorView{};
  // Only the first stage embeds (a tied lm_head above is its own view into the table).
  if (spec.stage != 0) s.weights.embed_tokens = {};
  for (size_t i = 0; i < weights.layers.size(); ++i) {
    const int64_t layer = static_cast<int64_t>(i);
    if (layer < s.layers.first || layer >= s.layers.end) {  // another stage's
      s.weights.layers[i] = LayerWeights{};
      continue;
    }
    const std::string p = fmt::format("layers.{}.", i);
    const LayerWeights& in = weights.layers[i];
    LayerWeights& out = s.weights.layers[i];
    if (!config.is_hybrid() || config.IsFullAttentionLayer(layer)) {
      PAGELLM_RETURN_IF_ERROR(ShardAttention(config, in, spec, out, s.weights, p));
    } else {
      PAGELLM_RETURN_IF_ERROR(ShardGdn(config, in, spec, out, s.weights, p));
    }
    if (config.IsMoeLayer(layer)) {
      PAGELLM_RETURN_IF_ERROR(ShardMoe(config, in, spec, out, s.weights, p));
    } else {
      PAGELLM_RETURN_IF_ERROR(ShardMlp(config, in, spec, out, s.weights, p));
    }
  }
  s.weight_bytes = ShardBytes(s.weights);
  return s;
}

}  // namespace pagellm
