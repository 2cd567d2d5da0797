// Fp8 Hugging Face linears (quant_method "fp8": Qwen3 / Qwen3.5 "-FP8", DeepSeek-V3), turned
// into the model's float dtype at load:
//
//   std::shared_ptr<void> buffer;
//   PAGELLM_ASSIGN_OR_RETURN(TensorView w, DequantizeFp8Linear(source, prefix, config, DType::kBF16, buffer));
//
// Layout: P.weight float8_e4m3fn [N, K] (safetensors "F8_E4M3", which the reader exposes as
// kU8 bytes: model/safetensors.h) and, with weight_block_size {bn, bk}, P.weight_scale_inv
// f32 / bf16 [ceil(N / bn), ceil(K / bk)]: despite the name a multiplier,
// w[n, k] = fp8[n, k] * scale_inv[n / bn, k / bk] (the last tiles may be ragged); without
// weight_block_size one P.weight_scale for the tensor. P.input_scale (activation_scheme
// static) is consumed and not used: the activations stay float.
//
// NOTE: a dequantization, not in place. There is no fp8 kernel, and q8_s cannot hold block
// scales (one scale per row; an e4m3 code is no int8 code either). Each weight is the exact
// product (e4m3's 4 significant bits times the scale's 24 fit a double) rounded once, to
// nearest even, into `dtype`: bf16 for a bf16 model, f32 when the model runs in f32 (so
// nothing is rounded twice). The weights then take a bf16 checkpoint's memory, twice the
// fp8 file's.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "model/hf_quant_config.h"
#include "model/hf_quant_tensors.h"
#include "model/tensor_source.h"

namespace pagellm {

// The value of an e4m3fn byte (no infinities; 0x7F and 0xFF are NaN), exactly.
float E4M3ToF32(uint8_t bits);

// `x` (finite) rounded to nearest even onto a binary format with `mantissa_bits` fraction
// bits and normal exponents down to `min_exponent` (subnormals below it); the result is a
// double holding that format's value exactly. bf16: (7, -126); f16: (10, -14); f32: (23, -126).
double RoundToBinaryFormat(double x, int mantissa_bits, int min_exponent);

// Where an fp8 module keeps its tensors: marker "weight_scale_inv" (blocks) or
// "weight_scale" (per tensor); consumed: weight, the scale and input_scale.
HfModuleLayout Fp8Layout(const HfQuantConfig& config);

// Module `prefix` of `source` as `dtype` (bf16, f16 or f32) [N, K] in a new 64-byte aligned
// buffer owned by `buffer`, filled in parallel. Errors name the tensor: a weight that is
// not e4m3, scales of the wrong shape, NaN codes or scales, products `dtype` cannot hold.
StatusOr<TensorView> DequantizeFp8Linear(const TensorSource& source, const std::string& prefix,
                                         const HfQuantConfig& config, DType dtype, std::shared_ptr<void>& buffer);

}  // namespace pagellm
