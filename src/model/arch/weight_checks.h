// Weight checks shared by the forward passes: shape/dtype validation against the
// config, fp32 copies of small vectors (norms), and per-expert slices of stacked 3-D
// expert tensors.
//
//   PAGELLM_RETURN_IF_ERROR(CheckWeightShape(lw.q_proj, {q, h}, "layers.0.q_proj"));
//   PAGELLM_ASSIGN_OR_RETURN(std::vector<float> w, WeightToF32(lw.input_layernorm, h, "layers.0.input_layernorm"));
//   TensorView gate_e = SliceRows(lw.experts_gate_up, e, 0, ie);  // [I_e, H] of expert e
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "tensor/tensor_view.h"

namespace pagellm {

// InvalidArgument naming `name` if `t` is empty, has another shape, or a dtype other
// than bf16/f16/f32 (kQ8_0 is accepted for 2-D weights, which the backend reads natively).
Status CheckWeightShape(const TensorView& t, const std::vector<int64_t>& want, const std::string& name);

// fp32 copy of a float tensor of `numel` elements whose shape must be `want`.
StatusOr<std::vector<float>> WeightToF32(const TensorView& t, const std::vector<int64_t>& want,
                                         const std::string& name);

// Rows [row_begin, row_begin + num_rows) of matrix `outer_idx` of a 3-D tensor
// [N, R, C], as a 2-D view [num_rows, C] (no copy). Precondition: in range.
TensorView SliceRows(const TensorView& t, int64_t outer_idx, int64_t row_begin, int64_t num_rows);

}  // namespace pagellm
