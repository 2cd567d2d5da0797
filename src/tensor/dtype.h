// DType: element types of weights, activations and KV cache.
//
// Most types are one fixed-size element each. kQ8_0 is block-quantized (llama.cpp's
// GGML_TYPE_Q8_0): a TensorView of kQ8_0 keeps its shape in ELEMENTS, e.g. a linear
// weight is [N, K] with K % 32 == 0, and its bytes are N * K / 32 blocks of
//   struct BlockQ8_0 { uint16_t d;  /* fp16 scale */  int8_t qs[32]; };  // 34 bytes
// stored row-major (row n = K / 32 consecutive blocks), value = fp16(d) * qs[i], exactly
// as in a GGUF file, so GGUF tensors bind in place (no copy, no dequantization).
// Byte counts of any dtype therefore go through DTypeBytes(dtype, num_elements);
// DTypeSize() is per element and CHECK-fails for block types.
//
//   size_t bytes = DTypeBytes(DType::kQ8_0, n * k);          // n * k / 32 * 34
//   if (DTypeBlockSize(view.dtype) > 1) { /* quantized: no per-element access */ }
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
  kQ8_0,  // llama.cpp Q8_0 blocks {fp16 d, int8 qs[32]} (34 bytes per 32 elements)
  kQ4_K,  // llama.cpp block_q4_K (144 bytes per 256 elements), bytes as in the GGUF file
  kQ6_K,  // llama.cpp block_q6_K (210 bytes per 256 elements), bytes as in the GGUF file
  kQ5_K,  // llama.cpp block_q5_K (176 bytes per 256 elements)
  kQ4_0,  // llama.cpp block_q4_0 (18 bytes per 32 elements)
  kQ5_0,  // llama.cpp block_q5_0 (22 bytes per 32 elements)
  kIQ4_NL,  // llama.cpp block_iq4_nl (18 bytes per 32 elements)
  kIQ4_XS,  // llama.cpp block_iq4_xs (136 bytes per 256 elements)
  kQ4_Z,    // pagellm's BlockQ4_Z (20 bytes per 32 elements): 4-bit codes with an fp16 scale and an
            // integer zero point, what AWQ / GPTQ / compressed-tensors int4 checkpoints become at load
  kQ8_S,    // pagellm's BlockQ8_S (36 bytes per 32 elements): int8 codes with an fp32 scale, what
            // per-channel int8 checkpoints (compressed-tensors W8A8) become at load; runs as W8A8
  kQ4_1,    // llama.cpp block_q4_1 (20 bytes per 32 elements): value = d * code + m
  kQ5_1,    // llama.cpp block_q5_1 (24 bytes per 32 elements): value = d * code + m, 5-bit codes
};

// Size of one llama.cpp block_q8_0 and the number of values it holds.
inline constexpr int64_t kQ8_0BlockElements = 32;
inline constexpr size_t kQ8_0BlockBytes = 34;

// Elements and bytes of one k-quant super-block (kQ4_K, kQ6_K).
inline constexpr int64_t kKQuantBlockElements = 256;
inline constexpr size_t kQ4_KBlockBytes = 144;
inline constexpr size_t kQ6_KBlockBytes = 210;

// Bytes per element. Precondition: not a block type (CHECK-fails for kQ8_0; use DTypeBytes).
size_t DTypeSize(DType dtype);

// Elements per block: 1 for plain types, 32 for kQ8_0 / kQ4_0 / kQ5_0 / kQ4_1 / kQ5_1 / kIQ4_NL / kQ4_Z /
// kQ8_S, 256 for the k-quants and kIQ4_XS.
int64_t DTypeBlockSize(DType dtype);

// Exact bytes of `num_elements` values. Precondition: num_elements % DTypeBlockSize == 0.
size_t DTypeBytes(DType dtype, int64_t num_elements);

// Lower-case name as in safetensors/torch: "f32", "f16", "bf16", "i8", ..., "q8_0", "q4_K", "q6_K".
std::string_view DTypeName(DType dtype);

// Parses safetensors dtype strings ("F32", "F16", "BF16", "I8", "I32", "I64", "U8").
StatusOr<DType> DTypeFromSafetensors(std::string_view name);
std::string_view DTypeToSafetensors(DType dtype);

// Parses user-facing names: "float32"/"f32"/"fp32", "float16"/"half"/"f16", "bfloat16"/"bf16".
StatusOr<DType> DTypeFromUserName(std::string_view name);

}  // namespace pagellm
