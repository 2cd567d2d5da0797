#include "backend/column_order.h"

#include <vector>

#include <fmt/format.h>

namespace pagellm {

Status ValidateColumnOrder(const TensorView& weight) {
  if (weight.column_order.empty()) return OkStatus();
  const int64_t k = weight.rank() == 2 ? weight.dim(1) : -1;
  if (static_cast<int64_t>(weight.column_order.size()) != k) {
    return InvalidArgumentError(fmt::format("linear weight {}: a column order of {} entries needs a 2-D weight "
                                            "with that many columns", ShapeToString(weight.shape),
                                            weight.column_order.size()));
  }
  std::vector<bool> seen(static_cast<size_t>(k), false);
  for (int32_t c : weight.column_order) {
    if (c < 0 || c >= k || seen[static_cast<size_t>(c)]) {
      return InvalidArgumentError(fmt::format("linear weight {}: the column order is not a permutation of [0, {}) "
                                              "(entry {})", ShapeToString(weight.shape), k, c));
    }
    seen[static_cast<size_t>(c)] = true;
  }
  return OkStatus();
}

void GatherColumns(const float* x, int64_t rows, std::span<const int32_t> order, float* out) {
  const int64_t k = static_cast<int64_t>(order.size());
  for (int64_t m = 0; m < rows; ++m) {
    const float* src = x + m * k;
    float* dst = out + m * k;
    for (int64_t j = 0; j < k; ++j) dst[j] = src[order[static_cast<size_t>(j)]];
  }
}

}  // namespace pagellm
