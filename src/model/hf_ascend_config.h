// msModelSlim checkpoints, the format vLLM-Ascend serves with `--quantization ascend`
// (vllm_ascend/quantization/modelslim_config.py): config.json has no quant_method; a flat
// JSON description beside it names every tensor's scheme,
//
//   {"model_quant_type": "W8A8_DYNAMIC", "version": "1.0.0",
//    "model.layers.0.mlp.down_proj.weight": "W8A8_DYNAMIC",
//    "model.layers.0.mlp.down_proj.weight_scale": "W8A8_DYNAMIC", ...,
//    "model.layers.0.input_layernorm.weight": "FLOAT", "lm_head.weight": "FLOAT"}
//
// and a W8A8_DYNAMIC linear P stores P.weight int8 [N, K], P.weight_scale and
// P.weight_offset [N, 1] (model dtype): per-channel symmetric weights (vLLM-Ascend passes
// no offset to its matmul) times per-token dynamic int8 activations, which is exactly q8_s's
// W8A8 (model/hf_int8_formats.h reads it).
//
//   PAGELLM_ASSIGN_OR_RETURN(auto file, FindAscendDescription(dir));  // optional path
//
// Accepted types: W8A8_DYNAMIC, W8A16 (int8 weights, float activations: run as W8A8, logged)
// and FLOAT. Refused by name: static W8A8 (per-tensor input_scale / input_offset and
// quant_bias / deq_scale: activations quantized with calibrated constants, which dynamic
// per-token quantization does not reproduce), W4A8_DYNAMIC, W8A8_MIX, KV-cache types (C8,
// fa_quant_type), and any other value.
#pragma once

#include <optional>
#include <string>

#include "common/json.h"
#include "common/status.h"
#include "model/hf_quant_config.h"

namespace pagellm {

// The description file of `dir`: quant_model_description.json (vLLM-Ascend's name), else
// the one quant_model_description_<type>.json older msModelSlim releases write (e.g.
// quant_model_description_w8a8_dynamic.json); nullopt when there is none; InvalidArgument
// when several <type> files make it ambiguous.
StatusOr<std::optional<std::string>> FindAscendDescription(const std::string& dir);

// Whether a quantization_config without quant_method is an msModelSlim description pasted
// into config.json: it has model_quant_type, or a "*.weight" entry with a string value.
bool LooksLikeAscendDescription(const Json& description);

// The description as an HfQuantConfig (method kAscend); `where` names it in messages.
StatusOr<HfQuantConfig> ParseAscendDescription(const Json& description, const std::string& where);

}  // namespace pagellm
