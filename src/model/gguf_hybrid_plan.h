// Tensor plans between Hugging Face and llama.cpp GGUF layouts for the hybrid Qwen3-Next /
// Qwen3.5 / Qwen3.5-MoE models (docs/qwen-architectures.md §5.2) and Qwen3-MoE (qwen3moe,
// whose only change is the stacked experts): which rows of which input tensors make each
// output tensor, an optional column permutation and an element op.
//
//   for (const GgufTensorPlan& p : HybridGgufPlans(config, "qwen35")) ...   // HF -> GGUF (convert)
//   for (const GgufTensorPlan& p : HybridHfPlans(config, "qwen35")) ...     // GGUF -> HF (load)
//   RunPlanRowsF32(plan, inputs, r0, r1, [&](int64_t r, const float* row) { ... });
//
// The forward plans follow llama.cpp's converter (Qwen3NextModel, _LinearAttentionVReorderBase):
//   * norms except linear_attn.norm: w + 1; A_log: -exp(A_log) (as ssm_a); dt_bias -> ssm_dt.bias;
//     conv1d squeezed to [conv_dim, K];
//   * Qwen3.5 with nk != nv: value heads reordered from grouped (j = g*r + jj) to tiled
//     (j' = jj*nk + g) order in the v rows of in_proj_qkv and conv1d, the rows of in_proj_z /
//     in_proj_b / in_proj_a, A_log and dt_bias, and the input columns of out_proj;
//   * Qwen3-Next: in_proj_qkvz (per key group [q k v z]) split into attn_qkv = [q | k | v]
//     and attn_gate = z (value heads keep grouped order); in_proj_ba kept as ssm_ba;
//   * experts: per-expert tensors stacked into ffn_{gate,up,down}_exps [E, ., .]; Qwen3.5-MoE's
//     fused gate_up_proj split at row I_e into ffn_gate_exps / ffn_up_exps;
//   * with_mtp (_QwenMtpMixin): the multi-token-prediction head as block N = num_hidden_layers
//     (+ l for mtp.layers.l): its layer tensors under their usual names with the same
//     transformations (norms + 1, experts stacked), mtp.fc -> blk.N.nextn.eh_proj as it is
//     ([H, 2H], input columns [embedding | hidden]), and its three norms, + 1, as
//     blk.N.nextn.{enorm,hnorm,shared_head_norm} (gguf/gguf_names.h GgufNextnSuffix).
// The inverse plans are derived mechanically from the forward ones (every HF row is written
// exactly once), so loading a converted file gives back the HF tensors (A_log up to float
// rounding of log(-(-exp(x)))).
// Rows are the last dimension: a tensor of shape [..., n] is read as numel / n rows of n.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/config.h"
#include "tensor/tensor_view.h"

namespace pagellm {

enum class GgufValueOp { kNone, kAddOne, kSubtractOne, kNegExp, kLogNeg };

struct GgufRowRef {
  int32_t input = 0;  // index into GgufTensorPlan::inputs
  int64_t row = 0;    // row of that input
};

struct GgufTensorPlan {
  std::string name;                 // output tensor (GGUF name forward, HF name inverse)
  std::vector<int64_t> shape;       // output shape, PyTorch order
  std::vector<std::string> inputs;  // input tensor names
  std::vector<GgufRowRef> rows;     // output row r <- rows[r]
  std::vector<int64_t> col_perm;    // output column c <- input column col_perm[c]; empty: identity
  GgufValueOp op = GgufValueOp::kNone;

  int64_t row_len() const { return shape.back(); }
  // One input read in order with no permutation or op: the output is the input's bytes.
  bool IsIdentity() const;
  // The first input row when the output is rows [start, start + rows) of one input with no
  // permutation or op (a slice of the input's bytes, e.g. one expert of a stack).
  std::optional<int64_t> ContiguousRowsStart() const;
};

// Row index of the tiled order: TiledValueRows(nk, nv, d)[i] is the grouped-order row that
// tiled-order row i holds (value head j' = jj*nk + g <- head g*r + jj, d rows per head).
std::vector<int64_t> TiledValueRows(int64_t nk, int64_t nv, int64_t d);

// Every GGUF tensor of `config` (a hybrid or Qwen3-MoE config), inputs named by HF names.
// `arch` is the GGUF architecture (qwen3moe, qwen3next, qwen35, qwen35moe). with_mtp appends
// the NextN block(s) of ListMtpWeightSpecs(config) (none when the config declares none).
StatusOr<std::vector<GgufTensorPlan>> HybridGgufPlans(const ModelConfig& config, const std::string& arch,
                                                      bool with_mtp = false);

// Every HF tensor of `config` (ListWeightSpecs order, then ListMtpWeightSpecs' with_mtp),
// inputs named by GGUF names.
StatusOr<std::vector<GgufTensorPlan>> HybridHfPlans(const ModelConfig& config, const std::string& arch,
                                                    bool with_mtp = false);

// Calls emit(r, row) for output rows [r0, r1) of `plan` computed in float32 (inputs of
// dtype f32/f16/bf16/q8_0 converted, column permutation and op applied). `inputs` are
// parallel to plan.inputs. Thread-safe for disjoint row ranges.
void RunPlanRowsF32(const GgufTensorPlan& plan, const std::vector<const TensorView*>& inputs, int64_t r0, int64_t r1,
                    const std::function<void(int64_t, const float*)>& emit);

// Executes `plan` into `out` (shape plan.shape). Rows are copied as bytes when there is no op
// and every input has out.dtype (column permutations move whole blocks, needing block-aligned
// runs for q8_0); otherwise out.dtype must be f32/f16/bf16 and rows go through float32.
Status RunPlan(const GgufTensorPlan& plan, const std::vector<const TensorView*>& inputs, const TensorView& out);

// The dtype RunPlan can produce for `plan` from inputs of dtype `in`: `in` when bytes can be
// moved as they are, else f32.
DType PlanOutputDType(const GgufTensorPlan& plan, DType in);

}  // namespace pagellm
