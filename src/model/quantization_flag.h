// vLLM's `--quantization` against a checkpoint's own quantization_config.
//
//   PAGELLM_RETURN_IF_ERROR(CheckQuantizationFlag(options.quantization, quant, dir));
//   LinearQuantizationFromName(FloatLinearQuantization(config.quantization));  // backend/backend.h
//
// As in vLLM: unset / "none" takes the method from the checkpoint; naming a checkpoint
// method ("awq" / "awq_marlin", "gptq" / "gptq_marlin", "compressed-tensors", "fp8",
// "ascend" for vLLM-Ascend's msModelSlim checkpoints) must match the checkpoint's; "int8"
// (pagellm's W8A8 of float weights) only applies to float checkpoints. The kernels behind
// "_marlin" are GPU ones; here both spellings load the same weights. "fp8" names fp8
// checkpoints only (vLLM's online fp8 quantization of float weights is not offered).
#pragma once

#include <string>

#include "common/status.h"
#include "model/hf_quant_config.h"

namespace pagellm {

// OK when `flag` fits the checkpoint at `model` (used in messages) whose
// quantization_config is `checkpoint`; InvalidArgument otherwise, e.g. "Quantization method
// specified in the model config (awq) does not match the quantization method specified in
// the `quantization` argument (gptq)."
Status CheckQuantizationFlag(const std::string& flag, const HfQuantConfig& checkpoint, const std::string& model);

// The quantization the backend applies to float linear weights: "none" when `flag` names
// a checkpoint method (that checkpoint's float layers, e.g. lm_head, stay float), else
// `flag` itself ("none", "int8").
std::string FloatLinearQuantization(const std::string& flag);

}  // namespace pagellm
