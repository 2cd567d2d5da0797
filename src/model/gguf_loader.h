// LoadGgufModel: LoadModel for a single `.gguf` file (LoadModel dispatches here when
// IsGgufPath(model_path)): config and generation defaults from the metadata, weights
// from the tensors, and the file itself as the tokenizer path (LoadTokenizer and
// LoadChatTemplate read the embedded tokenizer and chat template).
//
//   LoadOptions options;
//   options.model_path = "/models/Qwen3-0.6B-Q8_0.gguf";
//   PAGELLM_ASSIGN_OR_RETURN(LoadedModel model, LoadGgufModel(options));
//
// `--dtype auto` keeps F32/F16/BF16/Q8_0 tensors in their own type (views into the
// mapping; Q8_0 runs on the backend's int8 path) and dequantizes other quantized types
// to bf16; an explicit --dtype converts every tensor (float32 dequantizes exactly).
// `--load-format dummy` takes the config from the file and random weights.
#pragma once

#include <string>

#include "common/status.h"
#include "model/model_loader.h"

namespace pagellm {

// True when `path` names a regular file ending in ".gguf" (case-insensitive) or
// starting with the GGUF magic.
bool IsGgufPath(const std::string& path);

StatusOr<LoadedModel> LoadGgufModel(const LoadOptions& options);

}  // namespace pagellm
