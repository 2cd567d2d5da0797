#include "backend/reference/reference_backend.h"

#include <cmath>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "backend/column_order.h"
#include "backend/int8_quant.h"
#include "backend/kquant_gemm.h"
#include "tensor/kquant_blocks.h"
#include "tensor/half.h"

namespace pagellm {

Status ReadQ8_SRowScales(const TensorView& weight, std::vector<float>& scale) {
  scale.resize(static_cast<size_t>(weight.dim(0)));
  if (Q8_SRowScales(static_cast<const BlockQ8_S*>(weight.data), weight.dim(0), weight.dim(1), scale.data())) {
    return OkStatus();
  }
  return InvalidArgumentError(fmt::format("q8_s linear weight {}: a row's blocks do not share one scale (only "
                                          "per-output-channel int8 weights run, as W8A8)",
                                          ShapeToString(weight.shape)));
}

Status ValidateLinearWeight(const TensorView& weight, const TensorView& bias) {
  auto is_float = [](DType d) { return d == DType::kF32 || d == DType::kBF16 || d == DType::kF16; };
  if (weight.empty() || weight.rank() != 2) {
    return InvalidArgumentError(fmt::format("linear weight must be a 2-D [N, K] tensor, got {}",
                                            ShapeToString(weight.shape)));
  }
  if (!is_float(weight.dtype) && weight.dtype != DType::kQ8_0 && weight.dtype != DType::kQ8_S &&
      !IsPackedQuant(weight.dtype)) {
    return InvalidArgumentError(fmt::format("linear weight dtype {} is not supported", DTypeName(weight.dtype)));
  }
  if (IsPackedQuant(weight.dtype) && weight.dim(1) % DTypeBlockSize(weight.dtype) != 0) {
    return InvalidArgumentError(fmt::format("{} linear weight {} needs K % {} == 0", DTypeName(weight.dtype),
                                            ShapeToString(weight.shape), DTypeBlockSize(weight.dtype)));
  }
  if ((weight.dtype == DType::kQ8_0 || weight.dtype == DType::kQ8_S) && weight.dim(1) % kQ8_0BlockElements != 0) {
    return InvalidArgumentError(fmt::format("{} linear weight {} needs K % 32 == 0", DTypeName(weight.dtype),
                                            ShapeToString(weight.shape)));
  }
  // kQ8_S's one-scale-per-row is checked by ReadQ8_SRowScales, where PrepareLinear reads the
  // scales anyway: scanning every block here too would read the weight twice.
  if (!bias.empty() && (bias.numel() != weight.dim(0) || !is_float(bias.dtype))) {
    return InvalidArgumentError(fmt::format("linear bias {} {} does not match weight {}", DTypeName(bias.dtype),
                                            ShapeToString(bias.shape), ShapeToString(weight.shape)));
  }
  return OkStatus();
}

namespace {

class ReferenceLinearWeight final : public LinearWeight {
 public:
  ReferenceLinearWeight(const Backend* be, const TensorView& w, const TensorView& b)
      : LinearWeight(be, w.dim(0), w.dim(1)), weight(w), bias(b) {}
  TensorView weight;  // [N, K]
  TensorView bias;    // [N] or empty
  // W8A8 only: q_w [N, K] and s_w [N]; `weight` is then unused.
  std::vector<int8_t> q_w;
  std::vector<float> s_w;
  std::vector<int32_t> column_order;  // stored column j multiplies x[:, column_order[j]]; empty: identity
};

double BiasAt(const ReferenceLinearWeight& w, int64_t n) {
  return w.bias.empty() ? 0.0 : LoadElementAsF32(w.bias.data, w.bias.dtype, n);
}

// y [M, N] for kQ8_0 weights: per block, exact int32 dot times fp16(d_w) * fp16(d_x).
void LinearQ8_0(const ReferenceLinearWeight& w, const float* x, int64_t num_rows, float* y) {
  const int64_t n_out = w.out_features(), k_in = w.in_features(), nb = k_in / kQ8_0BlockElements;
  const auto* wq = static_cast<const BlockQ8_0*>(w.weight.data);
  std::vector<BlockQ8_0> xq(static_cast<size_t>(nb));
  for (int64_t m = 0; m < num_rows; ++m) {
    QuantizeRowQ8_0(x + m * k_in, k_in, xq.data());
    for (int64_t n = 0; n < n_out; ++n) {
      double acc = 0.0;
      for (int64_t b = 0; b < nb; ++b) {
        const BlockQ8_0& wb = wq[n * nb + b];
        const BlockQ8_0& xb = xq[static_cast<size_t>(b)];
        int32_t dot = 0;
        for (int i = 0; i < kQ8_0BlockElements; ++i) dot += int32_t{wb.qs[i]} * int32_t{xb.qs[i]};
        acc += static_cast<double>(dot) * (F16ToF32(wb.d) * F16ToF32(xb.d));
      }
      y[m * n_out + n] = static_cast<float>(acc + BiasAt(w, n));
    }
  }
}

// y [M, N] for W8A8: exact int dot times s_x[m] * s_w[n].
void LinearW8A8(const ReferenceLinearWeight& w, const float* x, int64_t num_rows, float* y) {
  const int64_t n_out = w.out_features(), k_in = w.in_features();
  std::vector<int8_t> xq(static_cast<size_t>(k_in));
  for (int64_t m = 0; m < num_rows; ++m) {
    const float s_x = QuantizeRowInt8(x + m * k_in, k_in, xq.data());
    for (int64_t n = 0; n < n_out; ++n) {
      int64_t dot = 0;
      for (int64_t k = 0; k < k_in; ++k) dot += int32_t{w.q_w[static_cast<size_t>(n * k_in + k)]} * int32_t{xq[static_cast<size_t>(k)]};
      y[m * n_out + n] = static_cast<float>(static_cast<double>(dot) * (s_x * w.s_w[static_cast<size_t>(n)]) + BiasAt(w, n));
    }
  }
}

}  // namespace

void ReferenceBackend::Embedding(const TensorView& table, std::span<const int32_t> ids, float* out) {
  const int64_t hidden = table.dim(1);
  for (size_t t = 0; t < ids.size(); ++t) {
    PAGELLM_CHECK(ids[t] >= 0 && ids[t] < table.dim(0));
    if (table.dtype == DType::kQ8_0) {
      const auto* rows = static_cast<const BlockQ8_0*>(table.data);
      DequantizeRowQ8_0(rows + ids[t] * (hidden / kQ8_0BlockElements), hidden, out + static_cast<int64_t>(t) * hidden);
      continue;
    }
    if (IsPackedQuant(table.dtype)) {
      const auto* rows = static_cast<const std::byte*>(table.data);
      DequantizeRowKQuant(table.dtype, rows + DTypeBytes(table.dtype, ids[t] * hidden), hidden,
                          out + static_cast<int64_t>(t) * hidden);
      continue;
    }
    for (int64_t h = 0; h < hidden; ++h) {
      out[static_cast<int64_t>(t) * hidden + h] = LoadElementAsF32(table.data, table.dtype, ids[t] * hidden + h);
    }
  }
}

void ReferenceBackend::RmsNorm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps,
                               float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    double sum_sq = 0.0;
    for (int64_t i = 0; i < dim; ++i) sum_sq += static_cast<double>(x[r * dim + i]) * x[r * dim + i];
    double inv = 1.0 / std::sqrt(sum_sq / static_cast<double>(dim) + eps);
    for (int64_t i = 0; i < dim; ++i) {
      y[r * dim + i] = static_cast<float>(weight[i] * (x[r * dim + i] * inv));
    }
  }
}

StatusOr<std::unique_ptr<LinearWeight>> ReferenceBackend::PrepareLinear(const TensorView& weight,
                                                                        const TensorView& bias,
                                                                        const LinearOptions& options) {
  PAGELLM_RETURN_IF_ERROR(ValidateLinearWeight(weight, bias));
  PAGELLM_RETURN_IF_ERROR(ValidateColumnOrder(weight));
  auto w = std::make_unique<ReferenceLinearWeight>(this, weight, bias);
  w->column_order.assign(weight.column_order.begin(), weight.column_order.end());
  if (weight.dtype == DType::kQ8_S) {  // pre-quantized per channel: W8A8 with the checkpoint's codes and scales
    const int64_t n_out = weight.dim(0), k_in = weight.dim(1);
    const auto* blocks = static_cast<const BlockQ8_S*>(weight.data);
    PAGELLM_RETURN_IF_ERROR(ReadQ8_SRowScales(weight, w->s_w));
    w->q_w.resize(static_cast<size_t>(n_out * k_in));
    for (int64_t i = 0; i < n_out * k_in; ++i) w->q_w[static_cast<size_t>(i)] = blocks[i / 32].qs[i % 32];
  } else if (options.quantization == LinearQuantization::kInt8 && DTypeBlockSize(weight.dtype) == 1) {
    const int64_t n_out = weight.dim(0), k_in = weight.dim(1);
    w->q_w.resize(static_cast<size_t>(n_out * k_in));
    w->s_w.resize(static_cast<size_t>(n_out));
    std::vector<float> row(static_cast<size_t>(k_in));
    for (int64_t n = 0; n < n_out; ++n) {
      for (int64_t k = 0; k < k_in; ++k) row[static_cast<size_t>(k)] = LoadElementAsF32(weight.data, weight.dtype, n * k_in + k);
      w->s_w[static_cast<size_t>(n)] = QuantizeRowInt8(row.data(), k_in, w->q_w.data() + n * k_in);
    }
  }
  return std::unique_ptr<LinearWeight>(std::move(w));
}

void ReferenceBackend::Linear(const LinearWeight& weight, const float* x, int64_t num_rows, float* y) {
  PAGELLM_CHECK(weight.backend() == this);
  const auto& w = static_cast<const ReferenceLinearWeight&>(weight);
  std::vector<float> ordered;
  if (!w.column_order.empty()) {
    ordered.resize(static_cast<size_t>(num_rows * w.in_features()));
    GatherColumns(x, num_rows, w.column_order, ordered.data());
    x = ordered.data();
  }
  if (w.weight.dtype == DType::kQ8_0) return LinearQ8_0(w, x, num_rows, y);
  if (IsPackedQuant(w.weight.dtype)) {
    const float* bias = nullptr;
    std::vector<float> bias_f32;
    if (!w.bias.empty()) {
      for (int64_t n = 0; n < w.out_features(); ++n) bias_f32.push_back(LoadElementAsF32(w.bias.data, w.bias.dtype, n));
      bias = bias_f32.data();
    }
    return GemmKQuantReference(w.weight.dtype, w.weight.data, w.out_features(), w.in_features(), x, num_rows, bias, y);
  }
  if (!w.s_w.empty()) return LinearW8A8(w, x, num_rows, y);
  const int64_t n_out = w.out_features(), k_in = w.in_features();
  for (int64_t m = 0; m < num_rows; ++m) {
    for (int64_t n = 0; n < n_out; ++n) {
      double acc = w.bias.empty() ? 0.0 : LoadElementAsF32(w.bias.data, w.bias.dtype, n);
      for (int64_t k = 0; k < k_in; ++k) {
        acc += static_cast<double>(x[m * k_in + k]) * LoadElementAsF32(w.weight.data, w.weight.dtype, n * k_in + k);
      }
      y[m * n_out + n] = static_cast<float>(acc);
    }
  }
}

void ReferenceBackend::Rope(const RopeTable& table, std::span<const int32_t> positions, int64_t num_heads,
                            int64_t head_dim, float* x) {
  const int64_t half = table.rotary_dim / 2;
  PAGELLM_CHECK(table.rotary_dim <= head_dim);
  for (size_t t = 0; t < positions.size(); ++t) {
    PAGELLM_CHECK(positions[t] >= 0 && positions[t] < table.max_positions);
    const float* c = table.cos_row(positions[t]);
    const float* s = table.sin_row(positions[t]);
    for (int64_t h = 0; h < num_heads; ++h) {
      float* head = x + (static_cast<int64_t>(t) * num_heads + h) * head_dim;
      for (int64_t j = 0; j < half; ++j) {
        float x1 = head[j], x2 = head[j + half];
        head[j] = x1 * c[j] - x2 * s[j];
        head[j + half] = x2 * c[j] + x1 * s[j];
      }
    }
  }
}

void ReferenceBackend::SiluMul(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    double g = gate[i];
    out[i] = static_cast<float>(g / (1.0 + std::exp(-g)) * up[i]);
  }
}

void ReferenceBackend::AddInPlace(const float* y, int64_t n, float* x) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void ReferenceBackend::WriteKv(const float* k, const float* v, std::span<const int64_t> slot_mapping,
                               const KvLayerView& cache) {
  for (size_t t = 0; t < slot_mapping.size(); ++t) {
    int64_t slot = slot_mapping[t];
    if (slot < 0) continue;
    PAGELLM_CHECK(slot < cache.num_slots());
    int64_t block = slot / cache.block_size, offset = slot % cache.block_size;
    for (int64_t h = 0; h < cache.num_kv_heads; ++h) {
      int64_t dst = cache.ElementIndex(block, h, offset);
      int64_t src = (static_cast<int64_t>(t) * cache.num_kv_heads + h) * cache.head_dim;
      for (int64_t d = 0; d < cache.head_dim; ++d) {
        StoreElementFromF32(cache.k, cache.dtype, dst + d, k[src + d]);
        StoreElementFromF32(cache.v, cache.dtype, dst + d, v[src + d]);
      }
    }
  }
}

namespace {

// One query row of one head against context tokens [0, num_ctx); two-pass softmax.
void AttendOne(const float* q, const KvLayerView& cache, const int32_t* block_table, int64_t kv_head,
               int64_t num_ctx, float scale, float* out) {
  const int64_t hd = cache.head_dim;
  std::vector<double> scores(static_cast<size_t>(num_ctx));
  double max_score = -std::numeric_limits<double>::infinity();
  for (int64_t t = 0; t < num_ctx; ++t) {
    int64_t base = cache.ElementIndex(block_table[t / cache.block_size], kv_head, t % cache.block_size);
    double dot = 0.0;
    for (int64_t d = 0; d < hd; ++d) dot += static_cast<double>(q[d]) * LoadElementAsF32(cache.k, cache.dtype, base + d);
    scores[static_cast<size_t>(t)] = dot * scale;
    max_score = std::max(max_score, scores[static_cast<size_t>(t)]);
  }
  double denom = 0.0;
  for (double& s : scores) denom += (s = std::exp(s - max_score));
  std::vector<double> acc(static_cast<size_t>(hd), 0.0);
  for (int64_t t = 0; t < num_ctx; ++t) {
    int64_t base = cache.ElementIndex(block_table[t / cache.block_size], kv_head, t % cache.block_size);
    double p = scores[static_cast<size_t>(t)] / denom;
    for (int64_t d = 0; d < hd; ++d) acc[static_cast<size_t>(d)] += p * LoadElementAsF32(cache.v, cache.dtype, base + d);
  }
  for (int64_t d = 0; d < hd; ++d) out[d] = static_cast<float>(acc[static_cast<size_t>(d)]);
}

}  // namespace

void ReferenceBackend::PagedAttention(const float* q, const KvLayerView& cache, const AttentionBatch& batch,
                                      const AttentionDims& dims, float* out) {
  const int64_t nh = dims.num_heads, hd = dims.head_dim, group = nh / dims.num_kv_heads;
  PAGELLM_CHECK(hd == cache.head_dim && dims.num_kv_heads == cache.num_kv_heads && nh % dims.num_kv_heads == 0);
  for (int32_t s = 0; s < batch.num_seqs(); ++s) {
    const int32_t q_begin = batch.query_start_loc[static_cast<size_t>(s)];
    const int32_t q_end = batch.query_start_loc[static_cast<size_t>(s) + 1];
    const int32_t seq_len = batch.seq_lens[static_cast<size_t>(s)];
    const int32_t* table = batch.block_tables.data() + static_cast<int64_t>(s) * batch.max_blocks_per_seq;
    for (int32_t i = q_begin; i < q_end; ++i) {
      const int64_t num_ctx = seq_len - (q_end - i) + 1;  // causal: keys up to this token's position
      PAGELLM_CHECK(num_ctx >= 1);
      for (int64_t h = 0; h < nh; ++h) {
        AttendOne(q + (i * nh + h) * hd, cache, table, h / group, num_ctx, dims.scale, out + (i * nh + h) * hd);
      }
    }
  }
}

}  // namespace pagellm
