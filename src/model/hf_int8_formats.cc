#include "model/hf_int8_formats.h"

#include <cstring>

#include <fmt/format.h>

#include "tensor/element_access.h"

namespace pagellm {
namespace {

// Byte j (bits 8j..8j+7) of a packed word.
inline int Byte(int32_t word, int j) { return static_cast<int>((static_cast<uint32_t>(word) >> (8 * j)) & 255u); }

// A packed byte stored unsigned around 128 (GPTQ's zero, compressed-tensors' offset) as the
// signed q8_s code.
inline int8_t SignedByte(uint32_t field) { return static_cast<int8_t>(static_cast<int>(field) - 128); }

// P.weight int8 [N, K] with P.weight_scale (compressed-tensors int-quantized, msModelSlim).
StatusOr<Int8Linear> ReadInt8Matrix(const TensorSource& source, const std::string& p) {
  PAGELLM_ASSIGN_OR_RETURN(const TensorView* weight, RequireTensor(source, p + ".weight"));
  if (weight->dtype != DType::kI8 || weight->rank() != 2) {
    return InvalidArgumentError(fmt::format("tensor '{}.weight' is {} {}; expected an int8 matrix [out, in]", p,
                                            DTypeName(weight->dtype), ShapeToString(weight->shape)));
  }
  Int8Linear lin;
  lin.name = p;
  lin.n = weight->dim(0);
  lin.k = weight->dim(1);
  PAGELLM_RETURN_IF_ERROR(CheckQ8_SColumns(p + ".weight", lin.k));
  PAGELLM_ASSIGN_OR_RETURN(const TensorView* scale, RequireTensor(source, p + ".weight_scale"));
  PAGELLM_ASSIGN_OR_RETURN(lin.scales, ReadRowScales(*scale, p + ".weight_scale", lin.n));
  const auto* q = weight->as<const int8_t>();
  const int64_t k = lin.k;
  lin.read_codes = [q, k](int64_t row0, int64_t rows, int8_t* codes) {
    std::memcpy(codes, q + row0 * k, static_cast<size_t>(rows * k));
  };
  return lin;
}

// msModelSlim: P.weight_offset is the zero point; vLLM-Ascend's W8A8_DYNAMIC matmul takes
// none, so real checkpoints store zeros, and anything else is refused rather than dropped.
Status CheckZeroOffsets(const TensorSource& source, const std::string& p, int64_t n) {
  const std::string name = p + ".weight_offset";
  const TensorView* offset = source.Find(name);
  if (offset == nullptr) return OkStatus();
  if (offset->dtype != DType::kF32 && offset->dtype != DType::kBF16 && offset->dtype != DType::kF16) {
    return InvalidArgumentError(fmt::format("tensor '{}' has dtype {}; expected f32, bf16 or f16", name,
                                            DTypeName(offset->dtype)));
  }
  if (offset->numel() != n) {
    return InvalidArgumentError(fmt::format("tensor '{}' has shape {}; expected [{}, 1]", name,
                                            ShapeToString(offset->shape), n));
  }
  for (int64_t row = 0; row < n; ++row) {
    const float z = LoadElementAsF32(offset->data, offset->dtype, row);
    if (z != 0.0f) {
      return InvalidArgumentError(fmt::format(
          "tensor '{}': offset {} of row {} is not 0; asymmetric int8 weights are not supported (q8_s holds "
          "symmetric codes)", name, z, row));
    }
  }
  return OkStatus();
}

// compressed-tensors pack-quantized 8-bit: four codes per int32 along K, + 128.
StatusOr<Int8Linear> ReadCompressedPacked(const TensorSource& source, const std::string& p) {
  const TensorView* packed = nullptr;
  PAGELLM_ASSIGN_OR_RETURN(auto nk, ReadPackedWeight(source, p, 4, &packed));
  Int8Linear lin;
  lin.name = p;
  lin.n = nk.first;
  lin.k = nk.second;
  PAGELLM_RETURN_IF_ERROR(CheckQ8_SColumns(p + ".weight_packed", lin.k));
  PAGELLM_ASSIGN_OR_RETURN(const TensorView* scale, RequireTensor(source, p + ".weight_scale"));
  PAGELLM_ASSIGN_OR_RETURN(lin.scales, ReadRowScales(*scale, p + ".weight_scale", lin.n));
  lin.read_codes = RowPackedReader<8, int8_t>(packed->as<const int32_t>(), lin.k, packed->dim(1), SignedByte);
  return lin;
}

// GPTQ 8-bit: zeros must all be 128 (sym), the one group spans K.
Status CheckGptqZeros(const TensorSource& source, const std::string& p, int64_t n, bool v2) {
  const TensorView* qzeros = source.Find(p + ".qzeros");
  if (qzeros == nullptr) return OkStatus();  // sym: 128 implied
  PAGELLM_RETURN_IF_ERROR(ExpectTensor(*qzeros, p + ".qzeros", DType::kI32, {1, (n + 3) / 4}));
  // v1 ("gptq") stores zero - 1 (AutoGPTQ's convention; vLLM's kernels add the 1 back).
  const int offset = v2 ? 0 : 1;
  const auto* z = qzeros->as<const int32_t>();
  for (int64_t col = 0; col < n; ++col) {
    const int zero = Byte(z[col / 4], static_cast<int>(col % 4)) + offset;
    if (zero != 128) {
      return InvalidArgumentError(fmt::format(
          "tensor '{}.qzeros': zero point {} of column {} (checkpoint_format {}) is not 128; only symmetric 8-bit "
          "GPTQ loads as q8_s", p, zero, col, v2 ? "gptq_v2" : "gptq"));
    }
  }
  return OkStatus();
}

StatusOr<Int8Linear> ReadGptq8(const TensorSource& source, const std::string& p, const HfQuantConfig& config) {
  PAGELLM_ASSIGN_OR_RETURN(const TensorView* qweight, RequireTensor(source, p + ".qweight"));
  PAGELLM_RETURN_IF_ERROR(ExpectPackedMatrix(*qweight, p + ".qweight"));
  Int8Linear lin;
  lin.name = p;
  lin.k = qweight->dim(0) * 4;
  lin.n = qweight->dim(1);
  PAGELLM_RETURN_IF_ERROR(CheckQ8_SColumns(p + ".qweight", lin.k));
  PAGELLM_RETURN_IF_ERROR(CheckTrivialGroupIndex(source, p + ".g_idx", lin.k, lin.k, "GPTQ desc_act"));
  PAGELLM_RETURN_IF_ERROR(CheckGptqZeros(source, p, lin.n, config.gptq_v2));
  PAGELLM_ASSIGN_OR_RETURN(const TensorView* scales, RequireTensor(source, p + ".scales"));
  PAGELLM_RETURN_IF_ERROR(ExpectShape(*scales, p + ".scales", {1, lin.n}));
  TensorView row_scales = *scales;  // one group: [1, N] is a scale per column n, i.e. per output row
  row_scales.shape = {lin.n};
  PAGELLM_ASSIGN_OR_RETURN(lin.scales, ReadRowScales(row_scales, p + ".scales", lin.n));
  lin.read_codes = ColumnPackedReader<8, int8_t>(qweight->as<const int32_t>(), lin.k, lin.n, SignedByte);
  return lin;
}

}  // namespace

HfModuleLayout Int8Layout(const HfQuantConfig& config) {
  switch (config.method) {
    case HfQuantMethod::kGptq: return {"qweight", {"qweight", "qzeros", "scales", "g_idx"}};
    case HfQuantMethod::kAscend: return {"weight_scale", {"weight", "weight_scale", "weight_offset"}};
    case HfQuantMethod::kCompressedTensors:
      if (config.int8_weight_tensor) return {"weight_scale", {"weight", "weight_scale"}};
      return {"weight_packed", {"weight_packed", "weight_scale", "weight_shape"}};
    default: return {};
  }
}

StatusOr<Int8Linear> ReadInt8Linear(const TensorSource& source, const std::string& prefix,
                                    const HfQuantConfig& config) {
  switch (config.method) {
    case HfQuantMethod::kGptq: return ReadGptq8(source, prefix, config);
    case HfQuantMethod::kCompressedTensors:
      return config.int8_weight_tensor ? ReadInt8Matrix(source, prefix) : ReadCompressedPacked(source, prefix);
    case HfQuantMethod::kAscend: {
      PAGELLM_ASSIGN_OR_RETURN(Int8Linear lin, ReadInt8Matrix(source, prefix));
      PAGELLM_RETURN_IF_ERROR(CheckZeroOffsets(source, prefix, lin.n));
      return lin;
    }
    default: break;
  }
  return InvalidArgumentError(fmt::format("{}: the checkpoint has no int8 quantization_config", prefix));
}

}  // namespace pagellm
