// Scalar element access for the float dtypes (f32, bf16, f16): the slow, obviously
// correct way to read or write one element, used by reference kernels and one-off
// conversions. Hot paths use the backend's vector code instead.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "tensor/dtype.h"
#include "tensor/half.h"

namespace pagellm {

// Element i of `data` (dtype f32/bf16/f16) as fp32. Precondition: a float dtype.
inline float LoadElementAsF32(const void* data, DType dtype, int64_t i) {
  switch (dtype) {
    case DType::kF32: return static_cast<const float*>(data)[i];
    case DType::kBF16: return Bf16ToF32(static_cast<const uint16_t*>(data)[i]);
    case DType::kF16: return F16ToF32(static_cast<const uint16_t*>(data)[i]);
    default: PAGELLM_CHECK(false && "LoadElementAsF32: not a float dtype");
  }
  return 0.0f;
}

// Stores `value` into element i of `data`, rounding to nearest even for bf16/f16.
inline void StoreElementFromF32(void* data, DType dtype, int64_t i, float value) {
  switch (dtype) {
    case DType::kF32: static_cast<float*>(data)[i] = value; return;
    case DType::kBF16: static_cast<uint16_t*>(data)[i] = F32ToBf16(value); return;
    case DType::kF16: static_cast<uint16_t*>(data)[i] = F32ToF16(value); return;
    default: PAGELLM_CHECK(false && "StoreElementFromF32: not a float dtype");
  }
}

}  // namespace pagellm
