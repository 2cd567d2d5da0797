// compressed-tensors (llm-compressor) quantization_config, behind ParseHfQuantConfig
// (model/hf_quant_config.h): the config_groups schemes pagellm loads in place.
//
//   format "pack-quantized"  weights {num_bits 4, int, group | channel}, no input_activations
//                            (W4A16)                                              -> q4_z
//                            weights {num_bits 8, int, symmetric, channel | tensor} (W8A16)
//   format "int-quantized"   weights {num_bits 8, int, symmetric, channel | tensor} with
//                            input_activations {8, int, dynamic true, token} (vLLM's W8A8
//                            int8 dynamic scheme; also without input_activations) -> q8_s
//
// Refused by name: static activation scales (dynamic false: input_scale tensors), fp8
// (float-quantized), asymmetric or grouped 8-bit weights, activation-quantized int4,
// output_activations, kv_cache_scheme, sparsity, groups with different weight schemes.
// Why W8A16 loads rather than being refused: q8_s runs W8A8, so its activations are
// quantized per token to int8, which vLLM's W8A16 does not do (logged via run_note); the
// alternative, dequantizing to bf16, would double the weights' memory for a gain the int4
// formats (run W4A8 the same way) already forgo.
#pragma once

#include "common/json.h"
#include "common/status.h"
#include "model/hf_quant_config.h"

namespace pagellm {

// `q` is the quantization_config object (quant_method "compressed-tensors").
StatusOr<HfQuantConfig> ParseCompressedTensorsConfig(const Json& q);

}  // namespace pagellm
