// HfQuantConfig: config.json's `quantization_config`, for the Hugging Face int4
// checkpoint formats pagellm loads in place (weights become DType::kQ4_Z, see
// model/hf_quant_source.h), parsed and checked the way vLLM reads them:
//
//   PAGELLM_ASSIGN_OR_RETURN(HfQuantConfig quant, LoadHfQuantConfig(dir));
//   if (quant.quantized()) ...  // quant.Describe() == "awq int4 g128"
//
//   awq                 bits 4, zero_point true, version "gemm" (AutoAWQ GEMM packing)
//   gptq                bits 4, sym, group_size (-1: per channel), desc_act,
//                       checkpoint_format "gptq" (v1: zeros stored minus 1) or "gptq_v2"
//   compressed-tensors  format "pack-quantized", config_groups weights {num_bits 4,
//                       type int, symmetric, strategy group | channel}, no activation
//                       quantization (W4A16)
// Anything else (fp8, bitsandbytes, W8A8 int8/fp8 compressed-tensors, GPTQ 8-bit, AWQ
// GEMV, ...) fails with InvalidArgument naming the method or key, so a checkpoint is never
// half understood. A config without quantization_config is a float checkpoint.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/json.h"
#include "common/status.h"

namespace pagellm {

enum class HfQuantMethod { kNone, kAwq, kGptq, kCompressedTensors };

// "none", "awq", "gptq", "compressed-tensors" (the quant_method spelling).
std::string_view HfQuantMethodName(HfQuantMethod method);

struct HfQuantConfig {
  HfQuantMethod method = HfQuantMethod::kNone;
  int bits = 4;
  int64_t group_size = -1;  // input columns sharing one scale and zero; -1: the whole row
  bool symmetric = false;   // zero point 8 (compressed-tensors stores no zeros then)
  bool gptq_v2 = false;     // GPTQ zeros stored as they are (v1 stores zero - 1)
  bool desc_act = false;    // GPTQ act-order / compressed-tensors actorder "group": g_idx decides
  // Modules kept in float: AWQ / GPTQ modules_to_not_convert (parts of a module name;
  // matched on whole dot-separated components, so "gate" names the MoE router mlp.gate but
  // not mlp.gate_proj, which vLLM's plain substring test would also catch) or
  // compressed-tensors `ignore` (names, or "re:" regexes matched from the start).
  // Informational: the tensors decide what is quantized (model/hf_quant_source.h).
  std::vector<std::string> ignore;

  bool quantized() const { return method != HfQuantMethod::kNone; }
  // Whether `module` ("model.layers.0.mlp.gate") is listed to stay float.
  bool IsIgnored(const std::string& module) const;
  // "awq int4 g128", "gptq int4 g128 sym", "compressed-tensors int4 channel asym", "none".
  std::string Describe() const;
};

// Reads `config_json`'s quantization_config (top level, or Qwen3.5's text_config).
StatusOr<HfQuantConfig> ParseHfQuantConfig(const Json& config_json);

// Reads `dir`/config.json; errors are prefixed with its path.
StatusOr<HfQuantConfig> LoadHfQuantConfig(const std::string& dir);

}  // namespace pagellm
