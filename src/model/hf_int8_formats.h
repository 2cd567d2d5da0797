// The Hugging Face per-channel int8 checkpoint layouts, read into an Int8Linear
// (model/hf_int8_linear.h) and from there into q8_s. N = out_features, K = in_features:
//
//   compressed-tensors   P.weight int8 [N, K] (torch int8: the signed codes); P.weight_scale
//   int-quantized        [N, 1] (strategy channel) or [1] (tensor), f32 / bf16 / f16.
//   (W8A8)
//   compressed-tensors   P.weight_packed int32 [N, ceil(K/4)]: byte j (bits 8j..8j+7) of
//   pack-quantized       [n, c] = code of k = 4c + j plus 128 (pack_to_int32's offset to
//   8-bit (W8A16)        unsigned); P.weight_shape {N, K}; P.weight_scale as above.
//   GPTQ 8-bit           P.qweight int32 [K/4, N]: byte j of [i, n] = code of input k = 4i + j,
//                        unsigned around zero 128 (AutoGPTQ packs 32 / bits values per int32
//                        along K); P.qzeros int32 [1, N/4], byte j of [0, c] = zero of
//                        n = 4c + j, stored minus 1 in v1 (so 0x7F7F7F7F for sym), as is in
//                        gptq_v2; every zero must be 128. P.scales [1, N]; optional P.g_idx.
//   msModelSlim          P.weight int8 [N, K]; P.weight_scale [N, 1]; P.weight_offset [N, 1],
//   W8A8_DYNAMIC/W8A16   which must be all zero (vLLM-Ascend's W8A8_DYNAMIC matmul ignores it).
// Every shape and dtype is checked; errors name the tensor.
#pragma once

#include <string>

#include "common/status.h"
#include "model/hf_int8_linear.h"
#include "model/hf_quant_config.h"
#include "model/hf_quant_tensors.h"
#include "model/tensor_source.h"

namespace pagellm {

// Where an int8 module of `config` (bits 8: gptq, compressed-tensors or ascend) keeps its
// tensors: marker "qweight" / "weight_packed" / "weight_scale", and the consumed suffixes.
HfModuleLayout Int8Layout(const HfQuantConfig& config);

// Reads module `prefix` ("model.layers.0.self_attn.q_proj", no trailing dot) of `source`.
// The returned reader borrows `source`'s tensors: use it while `source` lives.
StatusOr<Int8Linear> ReadInt8Linear(const TensorSource& source, const std::string& prefix,
                                    const HfQuantConfig& config);

}  // namespace pagellm
