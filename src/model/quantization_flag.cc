#include "model/quantization_flag.h"

#include <fmt/format.h>

namespace pagellm {
namespace {

// The checkpoint method a flag value names, if it names one.
HfQuantMethod MethodOfFlag(const std::string& flag) {
  if (flag == "awq" || flag == "awq_marlin") return HfQuantMethod::kAwq;
  if (flag == "gptq" || flag == "gptq_marlin") return HfQuantMethod::kGptq;
  if (flag == "compressed-tensors" || flag == "compressed_tensors") return HfQuantMethod::kCompressedTensors;
  if (flag == "fp8") return HfQuantMethod::kFp8;
  if (flag == "ascend") return HfQuantMethod::kAscend;  // vLLM-Ascend's name for msModelSlim checkpoints
  return HfQuantMethod::kNone;
}

}  // namespace

Status CheckQuantizationFlag(const std::string& flag, const HfQuantConfig& checkpoint, const std::string& model) {
  if (flag.empty() || flag == "none") return OkStatus();
  if (flag == "int8") {
    if (!checkpoint.quantized()) return OkStatus();
    return InvalidArgumentError(fmt::format(
        "--quantization int8 quantizes float weights, but {} is already quantized ({}); drop --quantization or "
        "pass {}", model, checkpoint.Describe(), HfQuantMethodName(checkpoint.method)));
  }
  const HfQuantMethod named = MethodOfFlag(flag);
  if (named == HfQuantMethod::kNone) {
    return InvalidArgumentError(fmt::format(
        "unknown --quantization '{}' (expected none, int8, awq, awq_marlin, gptq, gptq_marlin, compressed-tensors, "
        "fp8 or ascend)",
        flag));
  }
  if (!checkpoint.quantized()) {
    return InvalidArgumentError(fmt::format(
        "--quantization {} needs a checkpoint quantized with {}, but {} has no quantization_config (float weights; "
        "use none or int8)", flag, HfQuantMethodName(named), model));
  }
  if (named != checkpoint.method) {  // vLLM's message, word for word
    return InvalidArgumentError(fmt::format(
        "Quantization method specified in the model config ({}) does not match the quantization method specified "
        "in the `quantization` argument ({}).", HfQuantMethodName(checkpoint.method), flag));
  }
  return OkStatus();
}

std::string FloatLinearQuantization(const std::string& flag) {
  return MethodOfFlag(flag) != HfQuantMethod::kNone ? "none" : flag;
}

}  // namespace pagellm
