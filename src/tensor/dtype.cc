#include "tensor/dtype.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <fmt/format.h>

namespace pagellm {

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 4;
    case DType::kF16: return 2;
    case DType::kBF16: return 2;
    case DType::kI8: return 1;
    case DType::kI32: return 4;
    case DType::kI64: return 8;
    case DType::kU8: return 1;
    default:
      std::fprintf(stderr, "DTypeSize(%s): block type has no per-element size; use DTypeBytes\n",
                   std::string(DTypeName(dtype)).c_str());
      PAGELLM_CHECK(false);
  }
  return 0;
}

namespace {

// Elements and bytes per block of the block-quantized dtypes (ggml-common.h); {1, 0} otherwise.
std::pair<int64_t, size_t> BlockShape(DType dtype) {
  switch (dtype) {
    case DType::kQ8_0: return {kQ8_0BlockElements, kQ8_0BlockBytes};
    case DType::kQ4_K: return {kKQuantBlockElements, kQ4_KBlockBytes};
    case DType::kQ6_K: return {kKQuantBlockElements, kQ6_KBlockBytes};
    case DType::kQ5_K: return {kKQuantBlockElements, 176};
    case DType::kQ4_0: return {32, 18};
    case DType::kQ5_0: return {32, 22};
    case DType::kIQ4_NL: return {32, 18};
    case DType::kIQ4_XS: return {kKQuantBlockElements, 136};
    case DType::kQ4_Z: return {32, 20};
    case DType::kQ8_S: return {32, 36};
    case DType::kQ4_1: return {32, 20};
    case DType::kQ5_1: return {32, 24};
    default: return {1, 0};
  }
}

}  // namespace

int64_t DTypeBlockSize(DType dtype) { return BlockShape(dtype).first; }

size_t DTypeBytes(DType dtype, int64_t num_elements) {
  const auto [block, block_bytes] = BlockShape(dtype);
  if (block > 1) {
    PAGELLM_CHECK(num_elements % block == 0);
    return static_cast<size_t>(num_elements / block) * block_bytes;
  }
  return static_cast<size_t>(num_elements) * DTypeSize(dtype);
}

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kI8: return "i8";
    case DType::kI32: return "i32";
    case DType::kI64: return "i64";
    case DType::kU8: return "u8";
    case DType::kQ8_0: return "q8_0";
    case DType::kQ4_K: return "q4_K";
    case DType::kQ6_K: return "q6_K";
    case DType::kQ5_K: return "q5_K";
    case DType::kQ4_0: return "q4_0";
    case DType::kQ5_0: return "q5_0";
    case DType::kIQ4_NL: return "iq4_nl";
    case DType::kIQ4_XS: return "iq4_xs";
    case DType::kQ4_Z: return "q4_z";
    case DType::kQ8_S: return "q8_s";
    case DType::kQ4_1: return "q4_1";
    case DType::kQ5_1: return "q5_1";
  }
  return "?";
}

StatusOr<DType> DTypeFromSafetensors(std::string_view name) {
  if (name == "F32") return DType::kF32;
  if (name == "F16") return DType::kF16;
  if (name == "BF16") return DType::kBF16;
  if (name == "I8") return DType::kI8;
  if (name == "I32") return DType::kI32;
  if (name == "I64") return DType::kI64;
  if (name == "U8") return DType::kU8;
  return InvalidArgumentError(fmt::format("unsupported safetensors dtype '{}'", name));
}

std::string_view DTypeToSafetensors(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    case DType::kI8: return "I8";
    case DType::kI32: return "I32";
    case DType::kI64: return "I64";
    case DType::kU8: return "U8";
    default: return "?";  // safetensors has no block-quantized dtype
  }
  return "?";
}

StatusOr<DType> DTypeFromUserName(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "float32" || lower == "f32" || lower == "fp32" || lower == "float") return DType::kF32;
  if (lower == "float16" || lower == "f16" || lower == "fp16" || lower == "half") return DType::kF16;
  if (lower == "bfloat16" || lower == "bf16") return DType::kBF16;
  return InvalidArgumentError(
      fmt::format("unknown dtype '{}' (expected float32, float16 or bfloat16)", name));
}

}  // namespace pagellm
