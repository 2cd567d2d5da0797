// DType: element types of weights, activations and KV cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/status.h"

namespace pagellm {

enum class DType : uint8_t {
  kF32,
  kF16,
  kBF16,
  kI8,
  kI32,
  kI64,
  kU8,
};

// Bytes per element.
size_t DTypeSize(DType dtype);

// Lower-case name as in safetensors/torch: "f32", "f16", "bf16", "i8", ...
std::string_view DTypeName(DType dtype);

// Parses safetensors dtype strings ("F32", "F16", "BF16", "I8", "I32", "I64", "U8").
StatusOr<DType> DTypeFromSafetensors(std::string_view name);
std::string_view DTypeToSafetensors(DType dtype);

// Parses user-facing names: "float32"/"f32"/"fp32", "float16"/"half"/"f16", "bfloat16"/"bf16".
StatusOr<DType> DTypeFromUserName(std::string_view name);

}  // namespace pagellm
