// GGUF/ggml enums and the size rules of each tensor type, as llama.cpp defines them
// (ggml/include/ggml.h, ggml/src/ggml-common.h, ggml/include/gguf.h).
//
//   PAGELLM_ASSIGN_OR_RETURN(GgmlType type, GgmlTypeFromId(raw_id));
//   if (ne0 % GgmlBlockSize(type) != 0) ...;
//   size_t row_bytes = GgmlRowBytes(type, ne0);  // ne0 must be a multiple of the block size
//
// Only the types pagellm can dequantize are accepted; every other id is an error, so a
// tensor we cannot read is rejected when the file is opened, not when it is used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/status.h"

namespace pagellm {

// ggml_type ids as stored in GGUF tensor infos (values fixed by the file format).
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,  // llama-quantize's fallback for Q5_K rows
  kQ8_0 = 8,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kIQ4_NL = 20,
  kIQ4_XS = 23,
  kBF16 = 30,
};

// gguf_type ids of metadata values (values fixed by the file format).
enum class GgufValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};
inline constexpr uint32_t kGgufValueTypeCount = 13;

// "GGUF" read as a little-endian uint32.
inline constexpr uint32_t kGgufMagic = 0x46554747u;
inline constexpr uint32_t kGgufDefaultAlignment = 32;
inline constexpr int kGgmlMaxDims = 4;
// Elements per super-block of the K-quants (QK_K).
inline constexpr int64_t kQkK = 256;

// Maps a raw id to a supported type; errors name the id (and ggml's name when known).
StatusOr<GgmlType> GgmlTypeFromId(uint32_t id);
// Lower-case ggml names: "f32", "f16", "bf16", "q8_0", "q4_0", "q5_0", "q4_1", "q5_1", "q4_K",
// "q5_K", "q6_K", "iq4_nl", "iq4_xs".
std::string_view GgmlTypeName(GgmlType type);
// Parses the names above (case-insensitive) for CLI flags like --outtype.
StatusOr<GgmlType> GgmlTypeFromName(std::string_view name);
// Elements per block (1 for float types, 32 for Q8_0/Q4_0, 256 for K-quants).
int64_t GgmlBlockSize(GgmlType type);
// Bytes per block.
size_t GgmlTypeSize(GgmlType type);
// Bytes of `num_elements` values; precondition: a multiple of GgmlBlockSize(type).
size_t GgmlRowBytes(GgmlType type, int64_t num_elements);

// "uint32", "string", "array", ... ; "unknown(N)" for ids outside the format.
std::string_view GgufValueTypeName(GgufValueType type);
// Size of a fixed-width value, 0 for string/array.
size_t GgufValueTypeSize(GgufValueType type);

}  // namespace pagellm
