#include "model/gguf_hybrid_plan.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "gguf/gguf_names.h"
#include "gguf/gguf_quants.h"
#include "model/convert.h"
#include "model/weight_spec.h"
#include "tensor/kquant_blocks.h"

namespace pagellm {
namespace {

int64_t NumRows(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) n *= shape[i];
  return n;
}

// rows[i] = {input, begin + i} for i < n, appended.
void AppendRows(std::vector<GgufRowRef>& rows, int32_t input, int64_t begin, int64_t n) {
  for (int64_t i = 0; i < n; ++i) rows.push_back({input, begin + i});
}

GgufTensorPlan IdentityPlan(std::string name, std::vector<int64_t> shape, std::string input) {
  GgufTensorPlan p{std::move(name), std::move(shape), {std::move(input)}, {}, {}, GgufValueOp::kNone};
  AppendRows(p.rows, 0, 0, NumRows(p.shape));
  return p;
}

bool IsZeroCenteredNorm(const std::string& field) {
  auto ends = [&](std::string_view s) {
    return field.size() >= s.size() && field.compare(field.size() - s.size(), s.size(), s) == 0;
  };
  return ends("norm.weight") && !ends("linear_attn.norm.weight");
}

class ForwardBuilder {
 public:
  ForwardBuilder(const ModelConfig& c, const std::string& arch) : c_(c), arch_(arch) {
    const int64_t nk = c.linear_num_key_heads, nv = c.linear_num_value_heads;
    tiled_ = arch != "qwen3next" && nk > 0 && nk != nv;
    zero_centered_norms_ = IsHybridGgufArch(arch);  // qwen3moe's RMSNorms multiply by w
  }

  Status Add(const WeightSpec& spec) {
    if (spec.mtp && spec.layer_idx < 0) {  // mtp.fc and the head's three (zero-centred) norms
      PAGELLM_ASSIGN_OR_RETURN(std::string suffix, GgufNextnSuffix(spec.field));
      plans_.push_back(IdentityPlan(fmt::format("blk.{}.{}", c_.num_hidden_layers, suffix), spec.shape, spec.name));
      if (spec.role == WeightRole::kMtpNorm) plans_.back().op = GgufValueOp::kAddOne;
      return OkStatus();
    }
    if (spec.layer_idx < 0) {
      PAGELLM_ASSIGN_OR_RETURN(std::string name, HfToGgufTensorName(arch_, spec.name));
      plans_.push_back(IdentityPlan(name, spec.shape, spec.name));
      if (spec.role == WeightRole::kFinalNorm && zero_centered_norms_) plans_.back().op = GgufValueOp::kAddOne;
      return OkStatus();
    }
    const std::string& f = spec.field;
    if (spec.expert_idx >= 0) return spec.expert_idx == 0 ? AddStackedExperts(spec) : OkStatus();
    if (f == "mlp.experts.gate_up_proj") return AddSplitGateUp(spec);
    if (f == "mlp.experts.down_proj") {
      plans_.push_back(IdentityPlan(Blk(spec, "ffn_down_exps.weight"), spec.shape, spec.name));
      return OkStatus();
    }
    if (f == "linear_attn.in_proj_qkvz.weight") return AddSplitQkvz(spec);
    PAGELLM_ASSIGN_OR_RETURN(std::string suffix, GgufLayerSuffix(arch_, f));
    std::vector<int64_t> shape = spec.shape;
    if (f == "linear_attn.conv1d.weight") shape = {spec.shape[0], spec.shape[2]};  // squeezed
    GgufTensorPlan p = IdentityPlan(Blk(spec, suffix), shape, spec.name);
    if (zero_centered_norms_ && IsZeroCenteredNorm(f)) p.op = GgufValueOp::kAddOne;
    if (f == "linear_attn.A_log") p.op = GgufValueOp::kNegExp;
    if (tiled_) ReorderValueHeads(f, p);
    plans_.push_back(std::move(p));
    return OkStatus();
  }

  std::vector<GgufTensorPlan> Take() { return std::move(plans_); }

 private:
  // The GGUF block of a layer tensor: MTP layers follow the decoder layers.
  std::string Blk(const WeightSpec& spec, std::string_view suffix) const {
    return fmt::format("blk.{}.{}", spec.mtp ? c_.num_hidden_layers + spec.layer_idx : spec.layer_idx, suffix);
  }

  // _LinearAttentionVReorderBase.modify_tensors: grouped -> tiled value heads.
  void ReorderValueHeads(const std::string& f, GgufTensorPlan& p) const {
    const int64_t nk = c_.linear_num_key_heads, nv = c_.linear_num_value_heads, dv = c_.linear_value_head_dim;
    const int64_t key_dim = c_.linear_key_dim();
    if (f == "linear_attn.in_proj_qkv.weight" || f == "linear_attn.conv1d.weight") {
      std::vector<int64_t> perm = TiledValueRows(nk, nv, dv);
      for (size_t i = 0; i < perm.size(); ++i) p.rows[2 * key_dim + i].row = 2 * key_dim + perm[i];
    } else if (f == "linear_attn.in_proj_z.weight") {
      std::vector<int64_t> perm = TiledValueRows(nk, nv, dv);
      for (size_t i = 0; i < perm.size(); ++i) p.rows[i].row = perm[i];
    } else if (f == "linear_attn.in_proj_b.weight" || f == "linear_attn.in_proj_a.weight") {
      std::vector<int64_t> perm = TiledValueRows(nk, nv, 1);
      for (size_t i = 0; i < perm.size(); ++i) p.rows[i].row = perm[i];
    } else if (f == "linear_attn.dt_bias" || f == "linear_attn.A_log") {
      p.col_perm = TiledValueRows(nk, nv, 1);
    } else if (f == "linear_attn.out_proj.weight") {
      p.col_perm = TiledValueRows(nk, nv, dv);
    }
  }

  // Qwen2MoeModel: experts.M.{gate,up,down}_proj stacked into ffn_{gate,up,down}_exps [E, ., .].
  Status AddStackedExperts(const WeightSpec& spec) {
    const std::string kind = spec.field.find(".gate_proj.") != std::string::npos ? "gate"
                             : spec.field.find(".up_proj.") != std::string::npos ? "up"
                                                                                 : "down";
    GgufTensorPlan p;
    p.name = Blk(spec, fmt::format("ffn_{}_exps.weight", kind));
    p.shape = {c_.num_experts, spec.shape[0], spec.shape[1]};
    for (int64_t e = 0; e < c_.num_experts; ++e) {
      p.inputs.push_back(fmt::format("{}layers.{}.mlp.experts.{}.{}_proj.weight", spec.mtp ? "mtp." : c_.weight_prefix,
                                     spec.layer_idx, e, kind));
      AppendRows(p.rows, static_cast<int32_t>(e), 0, spec.shape[0]);
    }
    plans_.push_back(std::move(p));
    return OkStatus();
  }

  // Qwen2MoeModel: fused gate_up_proj [E, 2*I_e, H] split on dim -2 (gate first).
  Status AddSplitGateUp(const WeightSpec& spec) {
    const int64_t E = spec.shape[0], ie = spec.shape[1] / 2, h = spec.shape[2];
    for (int half = 0; half < 2; ++half) {
      GgufTensorPlan p{Blk(spec, half == 0 ? "ffn_gate_exps.weight" : "ffn_up_exps.weight"), {E, ie, h}, {spec.name},
                       {}, {}, GgufValueOp::kNone};
      for (int64_t e = 0; e < E; ++e) AppendRows(p.rows, 0, e * 2 * ie + half * ie, ie);
      plans_.push_back(std::move(p));
    }
    return OkStatus();
  }

  // Qwen3NextModel: in_proj_qkvz rows [nk x (q k v z)] -> attn_qkv [q_all k_all v_all], attn_gate z_all.
  Status AddSplitQkvz(const WeightSpec& spec) {
    const int64_t nk = c_.linear_num_key_heads, dk = c_.linear_key_head_dim;
    const int64_t rdv = c_.linear_value_dim() / nk, group = 2 * dk + 2 * rdv, h = spec.shape[1];
    GgufTensorPlan qkv{Blk(spec, "attn_qkv.weight"), {c_.linear_conv_dim(), h}, {spec.name}, {}, {}, GgufValueOp::kNone};
    for (int64_t g = 0; g < nk; ++g) AppendRows(qkv.rows, 0, g * group, dk);
    for (int64_t g = 0; g < nk; ++g) AppendRows(qkv.rows, 0, g * group + dk, dk);
    for (int64_t g = 0; g < nk; ++g) AppendRows(qkv.rows, 0, g * group + 2 * dk, rdv);
    GgufTensorPlan z{Blk(spec, "attn_gate.weight"), {c_.linear_value_dim(), h}, {spec.name}, {}, {}, GgufValueOp::kNone};
    for (int64_t g = 0; g < nk; ++g) AppendRows(z.rows, 0, g * group + 2 * dk + rdv, rdv);
    plans_.push_back(std::move(qkv));
    plans_.push_back(std::move(z));
    return OkStatus();
  }

  const ModelConfig& c_;
  std::string arch_;
  bool tiled_ = false;
  bool zero_centered_norms_ = false;
  std::vector<GgufTensorPlan> plans_;
};

GgufValueOp InverseOp(GgufValueOp op) {
  switch (op) {
    case GgufValueOp::kAddOne: return GgufValueOp::kSubtractOne;
    case GgufValueOp::kSubtractOne: return GgufValueOp::kAddOne;
    case GgufValueOp::kNegExp: return GgufValueOp::kLogNeg;
    case GgufValueOp::kLogNeg: return GgufValueOp::kNegExp;
    case GgufValueOp::kNone: break;
  }
  return GgufValueOp::kNone;
}

std::vector<int64_t> InversePerm(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return inv;
}

float ApplyOp(GgufValueOp op, float x) {
  switch (op) {
    case GgufValueOp::kAddOne: return x + 1.0f;
    case GgufValueOp::kSubtractOne: return x - 1.0f;
    case GgufValueOp::kNegExp: return -std::exp(x);
    case GgufValueOp::kLogNeg: return static_cast<float>(std::log(-static_cast<double>(x)));
    case GgufValueOp::kNone: break;
  }
  return x;
}

// Reads row `row` (n values) of `in` as float32.
void ReadRowF32(const TensorView& in, int64_t row, int64_t n, float* out) {
  const std::byte* src = static_cast<const std::byte*>(in.data) + DTypeBytes(in.dtype, row * n);
  if (in.dtype == DType::kQ8_0) {
    PAGELLM_CHECK(Dequantize(GgmlType::kQ8_0, {src, DTypeBytes(in.dtype, n)}, n, out).ok());
    return;
  }
  if (IsPackedQuant(in.dtype)) {
    DequantizeRowKQuant(in.dtype, src, n, out);
    return;
  }
  ConvertTensor(TensorView{const_cast<std::byte*>(src), in.dtype, {n}}, TensorView{out, DType::kF32, {n}});
}

// True when col_perm moves whole aligned blocks of `block` columns.
bool BlockAligned(const std::vector<int64_t>& col_perm, int64_t block) {
  for (size_t b = 0; b < col_perm.size(); b += static_cast<size_t>(block)) {
    if (col_perm[b] % block != 0) return false;
    for (int64_t i = 1; i < block; ++i) {
      if (col_perm[b + static_cast<size_t>(i)] != col_perm[b] + i) return false;
    }
  }
  return true;
}

// ListWeightSpecs, then (with_mtp) ListMtpWeightSpecs: the order plans are made and written in.
std::vector<WeightSpec> PlannedSpecs(const ModelConfig& config, bool with_mtp) {
  std::vector<WeightSpec> specs = ListWeightSpecs(config);
  if (with_mtp) {
    for (WeightSpec& spec : ListMtpWeightSpecs(config)) specs.push_back(std::move(spec));
  }
  return specs;
}

}  // namespace

std::optional<int64_t> GgufTensorPlan::ContiguousRowsStart() const {
  if (inputs.size() != 1 || !col_perm.empty() || op != GgufValueOp::kNone || rows.empty()) return std::nullopt;
  for (size_t r = 0; r < rows.size(); ++r) {
    if (rows[r].input != 0 || rows[r].row != rows[0].row + static_cast<int64_t>(r)) return std::nullopt;
  }
  return rows[0].row;
}

bool GgufTensorPlan::IsIdentity() const {
  if (inputs.size() != 1 || !col_perm.empty() || op != GgufValueOp::kNone) return false;
  for (size_t r = 0; r < rows.size(); ++r) {
    if (rows[r].input != 0 || rows[r].row != static_cast<int64_t>(r)) return false;
  }
  return true;
}

std::vector<int64_t> TiledValueRows(int64_t nk, int64_t nv, int64_t d) {
  const int64_t r = nv / nk;
  std::vector<int64_t> rows;
  rows.reserve(static_cast<size_t>(nv * d));
  for (int64_t jj = 0; jj < r; ++jj) {
    for (int64_t g = 0; g < nk; ++g) {
      for (int64_t i = 0; i < d; ++i) rows.push_back((g * r + jj) * d + i);
    }
  }
  return rows;
}

StatusOr<std::vector<GgufTensorPlan>> HybridGgufPlans(const ModelConfig& config, const std::string& arch,
                                                      bool with_mtp) {
  const bool moe = config.arch == ModelArch::kQwen3Moe && arch == "qwen3moe";
  if (!moe && (!config.is_hybrid() || !IsHybridGgufArch(arch))) {
    return InvalidArgumentError(fmt::format("{} ({}) is not a GGUF architecture with tensor plans", arch,
                                            config.model_type));
  }
  if (moe && (!config.mlp_only_layers.empty() || config.decoder_sparse_step != 1)) {
    return UnimplementedError(fmt::format("{}: dense MLP layers (mlp_only_layers, decoder_sparse_step {}) have no "
                                          "place in llama.cpp's qwen3moe, whose every layer is MoE",
                                          config.model_type, config.decoder_sparse_step));
  }
  if (with_mtp && config.mtp_num_hidden_layers > 0 && !IsHybridGgufArch(arch)) {
    return InvalidArgumentError(fmt::format("{} has no multi-token-prediction (NextN) block", arch));
  }
  ForwardBuilder builder(config, arch);
  for (const WeightSpec& spec : PlannedSpecs(config, with_mtp)) PAGELLM_RETURN_IF_ERROR(builder.Add(spec));
  return builder.Take();
}

StatusOr<std::vector<GgufTensorPlan>> HybridHfPlans(const ModelConfig& config, const std::string& arch,
                                                    bool with_mtp) {
  PAGELLM_ASSIGN_OR_RETURN(std::vector<GgufTensorPlan> forward, HybridGgufPlans(config, arch, with_mtp));
  std::vector<GgufTensorPlan> plans;
  std::map<std::string, size_t> index;
  for (const WeightSpec& spec : PlannedSpecs(config, with_mtp)) {
    index[spec.name] = plans.size();
    plans.push_back({spec.name, spec.shape, {}, std::vector<GgufRowRef>(NumRows(spec.shape), {-1, -1}), {}, {}});
  }
  for (const GgufTensorPlan& f : forward) {
    std::vector<int64_t> inv_cols = InversePerm(f.col_perm);
    for (size_t r = 0; r < f.rows.size(); ++r) {
      auto it = index.find(f.inputs[static_cast<size_t>(f.rows[r].input)]);
      PAGELLM_CHECK(it != index.end());
      GgufTensorPlan& q = plans[it->second];
      PAGELLM_CHECK(q.row_len() == f.row_len());
      auto in = std::find(q.inputs.begin(), q.inputs.end(), f.name);
      if (in == q.inputs.end()) in = q.inputs.insert(q.inputs.end(), f.name);
      GgufRowRef& ref = q.rows[static_cast<size_t>(f.rows[r].row)];
      PAGELLM_CHECK(ref.input < 0);  // every HF row is written once
      ref = {static_cast<int32_t>(in - q.inputs.begin()), static_cast<int64_t>(r)};
      q.col_perm = inv_cols;
      q.op = InverseOp(f.op);
    }
  }
  for (const GgufTensorPlan& q : plans) {
    for (const GgufRowRef& ref : q.rows) PAGELLM_CHECK(ref.input >= 0);
  }
  return plans;
}

void RunPlanRowsF32(const GgufTensorPlan& plan, const std::vector<const TensorView*>& inputs, int64_t r0, int64_t r1,
                    const std::function<void(int64_t, const float*)>& emit) {
  const int64_t n = plan.row_len();
  std::vector<float> src(static_cast<size_t>(n)), dst(static_cast<size_t>(n));
  for (int64_t r = r0; r < r1; ++r) {
    const GgufRowRef& ref = plan.rows[static_cast<size_t>(r)];
    ReadRowF32(*inputs[static_cast<size_t>(ref.input)], ref.row, n, src.data());
    for (int64_t c = 0; c < n; ++c) {
      float x = plan.col_perm.empty() ? src[static_cast<size_t>(c)] : src[static_cast<size_t>(plan.col_perm[c])];
      dst[static_cast<size_t>(c)] = ApplyOp(plan.op, x);
    }
    emit(r, dst.data());
  }
}

DType PlanOutputDType(const GgufTensorPlan& plan, DType in) {
  if (plan.op != GgufValueOp::kNone) return DType::kF32;
  if (!plan.col_perm.empty() && !BlockAligned(plan.col_perm, DTypeBlockSize(in))) return DType::kF32;
  return in;
}

Status RunPlan(const GgufTensorPlan& plan, const std::vector<const TensorView*>& inputs, const TensorView& out) {
  const int64_t n = plan.row_len(), num_rows = static_cast<int64_t>(plan.rows.size());
  bool bytes = plan.op == GgufValueOp::kNone;
  for (const TensorView* in : inputs) bytes = bytes && in->dtype == out.dtype;
  if (bytes && !plan.col_perm.empty()) bytes = BlockAligned(plan.col_perm, DTypeBlockSize(out.dtype));
  if (!bytes && out.dtype != DType::kF32 && out.dtype != DType::kF16 && out.dtype != DType::kBF16) {
    return InvalidArgumentError(fmt::format("tensor '{}': cannot produce {} from its inputs", plan.name,
                                            DTypeName(out.dtype)));
  }
  const size_t row_bytes = DTypeBytes(out.dtype, n);
  auto* base = static_cast<std::byte*>(out.data);
  const int64_t grain = std::max<int64_t>(1, 65536 / n);
  if (bytes) {
    const int64_t block = DTypeBlockSize(out.dtype);
    const size_t block_bytes = DTypeBytes(out.dtype, block);
    ParallelFor(num_rows, grain, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const GgufRowRef& ref = plan.rows[static_cast<size_t>(r)];
        const std::byte* src = static_cast<const std::byte*>(inputs[static_cast<size_t>(ref.input)]->data) +
                               static_cast<size_t>(ref.row) * row_bytes;
        std::byte* dst = base + static_cast<size_t>(r) * row_bytes;
        if (plan.col_perm.empty()) {
          std::memcpy(dst, src, row_bytes);
          continue;
        }
        for (int64_t b = 0; b < n / block; ++b) {
          std::memcpy(dst + b * block_bytes, src + plan.col_perm[b * block] / block * block_bytes, block_bytes);
        }
      }
    });
    return OkStatus();
  }
  ParallelFor(num_rows, grain, [&](int64_t begin, int64_t end) {
    RunPlanRowsF32(plan, inputs, begin, end, [&](int64_t r, const float* row) {
      ConvertTensor(TensorView{const_cast<float*>(row), DType::kF32, {n}},
                    TensorView{base + static_cast<size_t>(r) * row_bytes, out.dtype, {n}});
    });
  });
  return OkStatus();
}

}  // namespace pagellm
