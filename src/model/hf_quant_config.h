// HfQuantConfig: how a Hugging Face checkpoint's linears are quantized, read from
// config.json's `quantization_config` (or, for vLLM-Ascend's msModelSlim checkpoints, from
// the quant_model_description.json beside it, model/hf_ascend_config.h) and checked the way
// vLLM reads them:
//
//   PAGELLM_ASSIGN_OR_RETURN(HfQuantConfig quant, LoadHfQuantConfig(dir));
//   if (quant.quantized()) ...  // quant.Describe() == "awq int4 g128"
//
// What loads, and what each quantized linear becomes (model/hf_quant_source.h):
//   awq                 bits 4, zero_point true, version "gemm"                        -> q4_z
//   gptq                bits 4: sym or asym, any group_size, checkpoint_format "gptq" (v1:
//                       zeros stored minus 1) or "gptq_v2"                             -> q4_z
//                       bits 8: sym, group_size -1 (one scale per output row)          -> q8_s
//   compressed-tensors  "pack-quantized" weights {num_bits 4, int, group | channel},
//                       no activation quantization (W4A16)                             -> q4_z
//                       "int-quantized" weights {8, int, symmetric, channel | tensor},
//                       input_activations {8, int, dynamic true, token | tensor} (W8A8);
//                       "pack-quantized" 8-bit weights alike, no activations (W8A16)  -> q8_s
//   fp8                 fmt e4m3, weight_block_size [bn, bk] (weight_scale_inv) or none
//                       (one weight_scale per tensor)          -> dequantized to the model's
//                       float dtype at load (no fp8 kernel: not in place)
//   ascend              msModelSlim W8A8_DYNAMIC (and W8A16) per tensor                -> q8_s
// q8_s runs as W8A8: int8 weights times per-token dynamically quantized int8 activations,
// exactly vLLM's W8A8 int8 dynamic scheme; weight-only int8 checkpoints (W8A16) run that way
// too (run_note says so at load), as the int4 ones already run W4A8.
// Anything else (bitsandbytes, GPTQ 8-bit groups, static activation scales, asymmetric int8
// weights, int8 groups, fp8 e5m2, msModelSlim static W8A8, AWQ GEMV, ...) fails with
// InvalidArgument naming the method or key, so a checkpoint is never half understood. A
// config without quantization_config is a float checkpoint.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/json.h"
#include "common/status.h"

namespace pagellm {

enum class HfQuantMethod { kNone, kAwq, kGptq, kCompressedTensors, kFp8, kAscend };

// "none", "awq", "gptq", "compressed-tensors", "fp8", "ascend": the quant_method spelling,
// which is also vLLM's --quantization name.
std::string_view HfQuantMethodName(HfQuantMethod method);

struct HfQuantConfig {
  HfQuantMethod method = HfQuantMethod::kNone;
  int bits = 4;             // 4: q4_z; 8: int8 codes (q8_s) or fp8
  int64_t group_size = -1;  // input columns sharing one scale and zero; -1: the whole row
  bool tensor_scale = false;  // int8: one scale for the whole tensor (read as every row's)
  bool symmetric = false;   // zero point 8 (int4) / 128 (GPTQ int8); compressed-tensors stores no zeros then
  bool gptq_v2 = false;     // GPTQ zeros stored as they are (v1 stores zero - 1)
  bool desc_act = false;    // GPTQ act-order / compressed-tensors actorder "group": g_idx decides
  // compressed-tensors 8-bit: codes in an int8 `weight` ("int-quantized") rather than four
  // per int32 in `weight_packed` ("pack-quantized").
  bool int8_weight_tensor = false;
  // The producer's name for the scheme, for messages: "W8A8", "W8A16", "W8A8_DYNAMIC", ...
  std::string scheme;
  // How pagellm's run of this scheme differs from vLLM's, logged once at load; empty when
  // it does not (e.g. "W8A16 runs as W8A8: ...").
  std::string run_note;
  // fp8: rows and columns sharing one weight_scale_inv value; 0, 0: one weight_scale per tensor.
  int64_t block_n = 0, block_k = 0;
  // ascend: the msModelSlim description, tensor name -> "W8A8_DYNAMIC", "W8A16" or "FLOAT".
  std::map<std::string, std::string> ascend_types;
  // Modules kept in float: AWQ / GPTQ modules_to_not_convert, fp8 ignored_layers (parts of a
  // module name; matched on whole dot-separated components, so "gate" names the MoE router
  // mlp.gate but not mlp.gate_proj, which vLLM's plain substring test would also catch) or
  // compressed-tensors `ignore` (names, or "re:" regexes matched from the start); empty for
  // ascend, whose ascend_types say FLOAT instead.
  // Informational: the tensors decide what is quantized (model/hf_quant_source.h).
  std::vector<std::string> ignore;

  bool quantized() const { return method != HfQuantMethod::kNone; }
  // Whether `module` ("model.layers.0.mlp.gate") is listed to stay float (ascend: its
  // weight's type is FLOAT).
  bool IsIgnored(const std::string& module) const;
  // "awq int4 g128", "gptq int4 g128 sym", "compressed-tensors int8 channel sym W8A8",
  // "fp8 e4m3 128x128 blocks", "ascend int8 channel sym W8A8_DYNAMIC", "none".
  std::string Describe() const;
};

// Reads `config_json`'s quantization_config (top level, or Qwen3.5's text_config). A
// quantization_config without quant_method holding an msModelSlim description (what
// vLLM-Ascend's older docs told users to paste there) reads as ascend.
StatusOr<HfQuantConfig> ParseHfQuantConfig(const Json& config_json);

// Reads `dir`/config.json, or else an msModelSlim description next to it
// (model/hf_ascend_config.h); errors are prefixed with the file's path.
StatusOr<HfQuantConfig> LoadHfQuantConfig(const std::string& dir);

}  // namespace pagellm
