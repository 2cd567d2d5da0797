#include "model/arch/weight_checks.h"

#include <fmt/format.h>

#include "tensor/half.h"
#include "tensor/kquant_blocks.h"

namespace pagellm {

Status CheckWeightShape(const TensorView& t, const std::vector<int64_t>& want, const std::string& name) {
  if (t.empty()) return InvalidArgumentError(fmt::format("weight {} is missing", name));
  if (t.shape != want) {
    return InvalidArgumentError(fmt::format("weight {} has shape {}, expected {}", name, ShapeToString(t.shape),
                                            ShapeToString(want)));
  }
  // Block-quantized weights go to the backend's linears: Q8_0 for matrices and stacked
  // experts, the other GGUF block types (kept in place for 2-D tensors only) and Q8_S (HF
  // int8 checkpoints) for matrices.
  const bool q8_0_ok = (t.dtype == DType::kQ8_0 && want.size() >= 2) ||
                       ((IsPackedQuant(t.dtype) || t.dtype == DType::kQ8_S) && want.size() == 2);
  if (t.dtype != DType::kBF16 && t.dtype != DType::kF16 && t.dtype != DType::kF32 && !q8_0_ok) {
    return InvalidArgumentError(fmt::format("weight {} has unsupported dtype {}", name, DTypeName(t.dtype)));
  }
  return OkStatus();
}

StatusOr<std::vector<float>> WeightToF32(const TensorView& t, const std::vector<int64_t>& want,
                                         const std::string& name) {
  PAGELLM_RETURN_IF_ERROR(CheckWeightShape(t, want, name));
  if (DTypeBlockSize(t.dtype) > 1) {
    return InvalidArgumentError(fmt::format("weight {} must not be {}", name, DTypeName(t.dtype)));
  }
  const int64_t n = t.numel();
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    out[static_cast<size_t>(i)] = t.dtype == DType::kF32    ? t.as<const float>()[i]
                                  : t.dtype == DType::kBF16 ? Bf16ToF32(t.as<const uint16_t>()[i])
                                                            : F16ToF32(t.as<const uint16_t>()[i]);
  }
  return out;
}

TensorView SliceRows(const TensorView& t, int64_t outer_idx, int64_t row_begin, int64_t num_rows) {
  PAGELLM_CHECK(t.rank() == 3 && outer_idx < t.dim(0) && row_begin + num_rows <= t.dim(1));
  const int64_t cols = t.dim(2);
  const int64_t first = (outer_idx * t.dim(1) + row_begin) * cols;
  TensorView v = t;
  v.data = static_cast<char*>(t.data) + DTypeBytes(t.dtype, first);
  v.shape = {num_rows, cols};
  return v;
}

}  // namespace pagellm
