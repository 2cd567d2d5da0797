#include "model/shard_plan.h"

#include <cstring>
#include <string>

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

// Columns [begin, begin + cols) of a 2-D tensor, copied (a column slice is strided).
// Q8_0: the bounds must fall on 32-element blocks.
StatusOr<TensorView> ColumnSlice(const TensorView& t, int64_t begin, int64_t cols, ModelWeights& out,
                                 const std::string& name) {
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

Status ShardAttention(const ModelConfig& c, const LayerWeights& in, ShardSpec s, LayerWeights& l, ModelWeights& out,
                      const std::string& p) {
  const int64_t hd = c.head_dim, nh_l = c.num_attention_heads / s.size;
  const KvHeads kv = KvHeadsOf(c.num_key_value_heads, s.rank, s.size);
  l.q_proj = RowSlice(in.q_proj, s.rank * nh_l * hd, nh_l * hd);
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

Status ShardMlp(const ModelConfig& c, const LayerWeights& in, ShardSpec s, LayerWeights& l, ModelWeights& out,
                const std::string& p) {
  const int64_t i_l = c.intermediate_size / s.size;
  l.gate_proj = RowSlice(in.gate_proj, s.rank * i_l, i_l);
  l.up_proj = RowSlice(in.up_proj, s.rank * i_l, i_l);
  PAGELLM_ASSIGN_OR_RETURN(l.down_proj, ColumnSlice(in.down_proj, s.rank * i_l, i_l, out, p + "down_proj"));
  return OkStatus();
}

int64_t ShardBytes(const ModelWeights& w) {
  int64_t total = static_cast<int64_t>(w.embed_tokens.nbytes() + w.norm.nbytes());
  const auto* embed = static_cast<const std::byte*>(w.embed_tokens.data);
  const auto* head = static_cast<const std::byte*>(w.lm_head.data);
  const bool head_in_embed = head >= embed && head < embed + w.embed_tokens.nbytes();
  if (!head_in_embed) total += static_cast<int64_t>(w.lm_head.nbytes());
  for (const LayerWeights& l : w.layers) {
    for (const TensorView* v : {&l.input_layernorm, &l.q_proj, &l.k_proj, &l.v_proj, &l.q_bias, &l.k_bias, &l.v_bias,
                                &l.o_proj, &l.o_bias, &l.q_norm, &l.k_norm, &l.post_attention_layernorm, &l.gate_proj,
                                &l.up_proj, &l.down_proj}) {
      if (!v->empty()) total += static_cast<int64_t>(v->nbytes());
    }
  }
  return total;
}

}  // namespace

Status CheckShardable(const ModelConfig& c, int n) {
  if (n < 1) return InvalidArgumentError(fmt::format("tensor parallel size must be >= 1, got {}", n));
  if (n == 1) return OkStatus();
  if (c.is_hybrid() || c.is_moe()) {
    return UnimplementedError(fmt::format("tensor parallelism for {} models is not implemented yet (dense Qwen2/Qwen3 "
                                          "only)", c.model_type));
  }
  auto divides = [&](int64_t value, const char* what) -> Status {
    if (value % n == 0) return OkStatus();
    return InvalidArgumentError(fmt::format("--tensor-parallel-size {} does not divide {} ({})", n, what, value));
  };
  PAGELLM_RETURN_IF_ERROR(divides(c.num_attention_heads, "num_attention_heads"));
  PAGELLM_RETURN_IF_ERROR(divides(c.intermediate_size, "intermediate_size"));
  PAGELLM_RETURN_IF_ERROR(divides(c.vocab_size, "vocab_size"));
  const int64_t nkv = c.num_key_value_heads;
  if (nkv % n != 0 && n % nkv != 0) {
    return InvalidArgumentError(fmt::format("--tensor-parallel-size {} and num_key_value_heads {}: one must divide the "
                                            "other (KV heads are split, or replicated when fewer than ranks)", n, nkv));
  }
  return OkStatus();
}

StatusOr<ShardedModel> ShardModel(const ModelConfig& config, const ModelWeights& weights, ShardSpec spec) {
  PAGELLM_RETURN_IF_ERROR(CheckShardable(config, spec.size));
  if (spec.rank < 0 || spec.rank >= spec.size) {
    return InvalidArgumentError(fmt::format("shard rank {} is not in [0, {})", spec.rank, spec.size));
  }
  ShardedModel s;
  s.config = config;
  s.weights = weights;  // shares the storage; the sliced views replace the full ones below
  const int n = spec.size;
  s.config.num_attention_heads = config.num_attention_heads / n;
  s.config.num_key_value_heads = KvHeadsOf(config.num_key_value_heads, spec.rank, n).count;
  s.config.intermediate_size = config.intermediate_size / n;
  s.lm_head_rows = config.vocab_size / n;
  s.vocab_begin = spec.rank * s.lm_head_rows;
  const TensorView& head = weights.lm_head.empty() ? weights.embed_tokens : weights.lm_head;
  s.weights.lm_head = RowSlice(head, s.vocab_begin, s.lm_head_rows);
  for (size_t i = 0; i < weights.layers.size(); ++i) {
    const std::string p = fmt::format("layers.{}.", i);
    PAGELLM_RETURN_IF_ERROR(ShardAttention(config, weights.layers[i], spec, s.weights.layers[i], s.weights, p));
    PAGELLM_RETURN_IF_ERROR(ShardMlp(config, weights.layers[i], spec, s.weights.layers[i], s.weights, p));
  }
  s.weight_bytes = ShardBytes(s.weights);
  return s;
}

}  // namespace pagellm
