// Linear weights stored with their input columns in another order (TensorView::column_order,
// GPTQ act-order): the checks at PrepareLinear and the gather every backend runs first.
//
//   PAGELLM_RETURN_IF_ERROR(ValidateColumnOrder(weight));     // at PrepareLinear
//   GatherColumns(x, rows, order, x_ordered);                 // x_ordered[m][j] = x[m][order[j]]
//   Linear on x_ordered with the stored weight == Linear on x with the logical weight
#pragma once

#include <cstdint>
#include <span>

#include "common/status.h"
#include "tensor/tensor_view.h"

namespace pagellm {

// OK when weight.column_order is empty or a permutation of [0, K) for a 2-D weight.
Status ValidateColumnOrder(const TensorView& weight);

// out [rows, K] = x [rows, K] with row m's columns taken in `order`.
void GatherColumns(const float* x, int64_t rows, std::span<const int32_t> order, float* out);

}  // namespace pagellm
