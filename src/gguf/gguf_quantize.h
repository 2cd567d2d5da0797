// Float rows -> the bytes of any GGUF tensor type pagellm reads, as llama.cpp writes them
// without an importance matrix: Q8_0 as the converter's quantize_row_q8_0_ref, the other block
// types as llama-quantize's ggml_quantize_chunk (gguf_quantize_blocks32.h,
// gguf_quantize_kquants.h, gguf_quantize_iq4.h), F16 / BF16 rounded to nearest even.
//
//   std::vector<std::byte> out(GgmlRowBytes(GgmlType::kQ4_K, n));
//   std::vector<float> row(x, x + n);
//   RoundToFloatType(GgmlType::kF16, row.data(), n);   // what an F16 file would hold
//   QuantizeRow(GgmlType::kQ4_K, row.data(), n, out.data());  // = llama-quantize on it
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/gguf_types.h"

namespace pagellm {

// Encodes n values as `type` into GgmlRowBytes(type, n) bytes at `out`.
// Precondition: n % GgmlBlockSize(type) == 0.
void QuantizeRow(GgmlType type, const float* x, int64_t n, std::byte* out);

// Replaces each value by the one a `type` tensor stores for it (F16 / BF16: round to nearest
// even and back; F32: unchanged), i.e. what llama-quantize reads back from such a file.
// Precondition: type is kF32, kF16 or kBF16.
void RoundToFloatType(GgmlType type, float* x, int64_t n);

}  // namespace pagellm
