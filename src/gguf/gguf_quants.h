// Dequantization of GGUF tensor data (F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, Q4_K, Q5_K,
// Q6_K, IQ4_NL, IQ4_XS) and the Q8_0 quantizer, bit-for-bit as llama.cpp defines them (ggml-common.h
// block layouts, ggml-quants.c dequantize_row_* and quantize_row_q8_0_ref). The other
// quantizers: gguf_quantize.h.
//
//   std::vector<float> w(t.num_elements);
//   PAGELLM_RETURN_IF_ERROR(Dequantize(t.type, t.data, t.num_elements, w.data()));
//
//   std::vector<std::byte> q(GgmlRowBytes(GgmlType::kQ8_0, n));
//   QuantizeQ8_0(src, n, q.data());  // same bytes as llama.cpp's convert --outtype q8_0
//
// Block layouts (little-endian, packed; "d" fields are IEEE fp16):
//   Q8_0 (32 values, 34 B):  d, int8 qs[32]                      x = d * q
//   Q4_0 (32 values, 18 B):  d, uint8 qs[16]                     x[j] = d*((qs[j]&15)-8), x[j+16] = d*((qs[j]>>4)-8)
//   Q4_K (256 values, 144 B): d, dmin, scales[12] (8 6-bit scale/min pairs), qs[128]
//   Q5_K (256 values, 176 B): d, dmin, scales[12], qh[32] (5th bits), qs[128]
//   Q6_K (256 values, 210 B): ql[128], qh[64], int8 scales[16], d
//   Q5_0 (32 values, 22 B):  d, uint32 qh (5th bits), qs[16]     x = d * (q - 16)
//   Q4_1 (32 values, 20 B):  d, m, qs[16]                        x = d * q + m
//   Q5_1 (32 values, 24 B):  d, m, uint32 qh, qs[16]             x = d * q + m
//   IQ4_NL (32 values, 18 B): d, qs[16] (Q4_0 nibble order)     x = d * kIq4NlValues[q]
//   IQ4_XS (256 values, 136 B): d, u16 scales_h, scales_l[4], qs[128]; 8 IQ4_NL-like
//                             sub-blocks of 32 with 6-bit scales ls: x = d * (ls - 32) * kIq4NlValues[q]
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "common/status.h"
#include "gguf/gguf_types.h"
#include "tensor/kquant_blocks.h"  // the block structs, GetScaleMinK4, kIq4NlValues

namespace pagellm {

// Decodes `num_elements` values of `type` from `src` into `dst` (float32).
// Errors if num_elements is not a multiple of the block size or `src` is not exactly
// GgmlRowBytes(type, num_elements) bytes.
Status Dequantize(GgmlType type, std::span<const std::byte> src, int64_t num_elements, float* dst);

// As Dequantize, then rounds to bf16 (round-to-nearest-even); BF16 input is copied exactly.
Status DequantizeToBf16(GgmlType type, std::span<const std::byte> src, int64_t num_elements,
                        uint16_t* dst);

// llama.cpp's quantize_row_q8_0_ref: per block of 32, d = amax/127 stored as fp16,
// q = roundf(x * (1/d)) with the float32 (not the rounded fp16) d.
// Precondition: num_elements % 32 == 0; `dst` holds GgmlRowBytes(kQ8_0, num_elements) bytes.
void QuantizeQ8_0(const float* src, int64_t num_elements, std::byte* dst);

}  // namespace pagellm
