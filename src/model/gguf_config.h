// GGUF model metadata -> ModelConfig and GenerationConfig, reading the keys llama.cpp's
// converter writes for `qwen2` / `qwen3` (see gguf/gguf_metadata.h for the writer side).
//
//   PAGELLM_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> gguf, GgufFile::Open("m.gguf"));
//   PAGELLM_ASSIGN_OR_RETURN(ModelConfig config, ModelConfigFromGguf(*gguf));
//   GenerationConfig gen = GenerationConfigFromGguf(*gguf);  // eos ids, bos id
//
// The metadata is translated into the equivalent config.json object and parsed by
// ParseModelConfig, so a GGUF file gets exactly the validation a checkpoint directory does.
// Facts GGUF keeps in tensors rather than keys are read from the tensor infos: vocab size
// (token_embd rows), tied embeddings (no output.weight), Qwen3 attention bias.
#pragma once

#include <cstdint>
#include <vector>

#include "common/json.h"
#include "common/status.h"
#include "gguf/gguf_file.h"
#include "model/config.h"
#include "model/generation_config.h"

namespace pagellm {

// The config.json object equivalent to `gguf`'s metadata (exposed for tests and messages).
StatusOr<Json> HfConfigJsonFromGguf(const GgufFile& gguf);

StatusOr<ModelConfig> ModelConfigFromGguf(const GgufFile& gguf);

// End-of-generation ids as llama.cpp collects them: tokenizer.ggml.eos_token_id,
// .eot_token_id, .eom_token_id, plus control/user-defined tokens spelled like one of llama.cpp's
// end markers (<|im_end|>, <|endoftext|>, <|eot_id|>, ...). Sorted, unique; empty if none.
std::vector<int32_t> GgufEndOfGenerationIds(const GgufFile& gguf);

// A GenerationConfig with eos ids (GgufEndOfGenerationIds, tokenizer.ggml.eos_token_id
// first) and bos id; sampling fields stay unset and `loaded` false (GGUF has no
// generation_config.json).
GenerationConfig GenerationConfigFromGguf(const GgufFile& gguf);

}  // namespace pagellm
