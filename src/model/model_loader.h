// LoadModel: the one call that turns a model directory or a `.gguf` file (or just a
// config for `--load-format dummy`) into config + generation defaults + weights.
// GGUF files go through LoadGgufModel (model/gguf_loader.h). Quantized Hugging Face
// checkpoints (config.json quantization_config, or an msModelSlim description) load their
// linears as q4_z (int4: AWQ, GPTQ, compressed-tensors) or q8_s (int8 per channel), or
// dequantize them (fp8) into the --dtype (model/hf_quant_source.h); --dtype otherwise
// applies to the float tensors only.
//
//   LoadOptions options;
//   options.model_path = "/models/qwen3-0.6b";
//   options.dtype = "float32";                    // vLLM's --dtype; "auto" keeps bf16
//   PAGELLM_ASSIGN_OR_RETURN(LoadedModel model, LoadModel(options));
//   // model.weights views point into the mapped safetensors (or into converted copies)
//
// Logs one line per load (tensors, bytes, dtype, seconds) and, when stderr is a TTY,
// draws a progress bar over the shards.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "model/config.h"
#include "model/generation_config.h"
#include "model/hf_quant_config.h"
#include "model/weights.h"

namespace pagellm {

struct LoadOptions {
  std::string model_path;
  std::string load_format = "auto";  // auto | safetensors | gguf | dummy
  std::string dtype = "auto";        // auto | bfloat16 | float16 | float32 (and aliases)
  uint64_t seed = 0;                 // dummy weights only
  // vLLM's --quantization, checked against config.json's quantization_config
  // (model/quantization_flag.h): none (take the checkpoint's) | int8 | awq | gptq | fp8 | ...
  std::string quantization = "none";
  // Also load the multi-token-prediction head (mtp.*) for --speculative-config method mtp;
  // NotFound when the checkpoint has none.
  bool load_mtp = false;
};

struct LoadedModel {
  ModelConfig config;
  GenerationConfig generation_config;
  ModelWeights weights;
  HfQuantConfig quantization;  // how the weights are quantized (method none: float weights)
  std::string tokenizer_path;  // directory containing tokenizer.json, or the .gguf; empty if none
};

StatusOr<LoadedModel> LoadModel(const LoadOptions& options);

}  // namespace pagellm
