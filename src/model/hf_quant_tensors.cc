#include "model/hf_quant_tensors.h"

#include <cstring>

#include <fmt/format.h>

namespace pagellm {

StatusOr<const TensorView*> RequireTensor(const TensorSource& source, const std::string& name) {
  const TensorView* t = source.Find(name);
  if (t == nullptr) return NotFoundError(fmt::format("quantized checkpoint is missing tensor '{}'", name));
  return t;
}

Status ExpectTensor(const TensorView& t, const std::string& name, DType dtype, const std::vector<int64_t>& shape) {
  if (t.dtype != dtype) {
    return InvalidArgumentError(fmt::format("tensor '{}' has dtype {}; expected {}", name, DTypeName(t.dtype),
                                            dtype == DType::kI32 ? "packed int32" : DTypeName(dtype)));
  }
  return ExpectShape(t, name, shape);
}

Status ExpectShape(const TensorView& t, const std::string& name, const std::vector<int64_t>& shape) {
  if (t.shape == shape) return OkStatus();
  return InvalidArgumentError(fmt::format("tensor '{}' has shape {}; expected {}", name, ShapeToString(t.shape),
                                          ShapeToString(shape)));
}

Status ExpectPackedMatrix(const TensorView& t, const std::string& name) {
  if (t.dtype != DType::kI32 || t.rank() != 2) {
    return InvalidArgumentError(fmt::format("tensor '{}' is {} {}; expected a packed int32 matrix", name,
                                            DTypeName(t.dtype), ShapeToString(t.shape)));
  }
  return OkStatus();
}

Status CheckTrivialGroupIndex(const TensorSource& source, const std::string& name, int64_t k, int64_t group,
                              const char* what) {
  const TensorView* g_idx = source.Find(name);
  if (g_idx == nullptr) return OkStatus();
  PAGELLM_RETURN_IF_ERROR(ExpectTensor(*g_idx, name, DType::kI32, {k}));
  const auto* idx = g_idx->as<const int32_t>();
  for (int64_t i = 0; i < k; ++i) {
    if (idx[i] != i / group) {
      return InvalidArgumentError(fmt::format(
          "{} (act-order g_idx) is not supported yet: tensor {} (g_idx[{}] = {}, expected {} for group size {})",
          what, name, i, idx[i], i / group, group));
    }
  }
  return OkStatus();
}

Status ExpectFloatScales(const TensorView& t, const std::string& name) {
  if (t.dtype == DType::kF32 || t.dtype == DType::kBF16 || t.dtype == DType::kF16) return OkStatus();
  return InvalidArgumentError(fmt::format("{} has dtype {}; expected f32, bf16 or f16 scales", name,
                                          DTypeName(t.dtype)));
}

namespace {

// weight_shape {N, K}, int32 or int64.
StatusOr<std::pair<int64_t, int64_t>> ReadWeightShape(const TensorView& t, const std::string& name) {
  if ((t.dtype != DType::kI32 && t.dtype != DType::kI64) || t.shape != std::vector<int64_t>{2}) {
    return InvalidArgumentError(fmt::format("tensor '{}' is {} {}; expected int32 or int64 [2]", name,
                                            DTypeName(t.dtype), ShapeToString(t.shape)));
  }
  int64_t dims[2];
  for (int i = 0; i < 2; ++i) {
    if (t.dtype == DType::kI64) {
      std::memcpy(&dims[i], static_cast<const int64_t*>(t.data) + i, sizeof(int64_t));
    } else {
      dims[i] = t.as<const int32_t>()[i];
    }
  }
  return std::make_pair(dims[0], dims[1]);
}

}  // namespace

StatusOr<std::pair<int64_t, int64_t>> ReadPackedWeight(const TensorSource& source, const std::string& p,
                                                       int64_t values_per_word, const TensorView** packed) {
  PAGELLM_ASSIGN_OR_RETURN(*packed, RequireTensor(source, p + ".weight_packed"));
  PAGELLM_RETURN_IF_ERROR(ExpectPackedMatrix(**packed, p + ".weight_packed"));
  const int64_t n = (*packed)->dim(0), words = (*packed)->dim(1);
  const TensorView* shape = source.Find(p + ".weight_shape");
  if (shape == nullptr) return std::make_pair(n, words * values_per_word);
  PAGELLM_ASSIGN_OR_RETURN(auto nk, ReadWeightShape(*shape, p + ".weight_shape"));
  if (nk.first != n || (nk.second + values_per_word - 1) / values_per_word != words) {
    return InvalidArgumentError(fmt::format("tensor '{}.weight_shape' says [{}, {}] but {}.weight_packed is {}", p,
                                            nk.first, nk.second, p, ShapeToString((*packed)->shape)));
  }
  return nk;
}

}  // namespace pagellm
