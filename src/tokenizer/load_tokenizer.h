// LoadTokenizer: the tokenizer for a model path, whatever form the model comes in.
//
//   PAGELLM_ASSIGN_OR_RETURN(auto tok, tokenizer::LoadTokenizer("/models/qwen3"));
//
// Accepts a directory holding tokenizer.json or a tokenizer.json path. (GGUF files,
// whose tokenizer is embedded in their metadata, are handled here too once the GGUF
// loader lands.)
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "tokenizer/tokenizer.h"

namespace pagellm::tokenizer {

StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& path);

}  // namespace pagellm::tokenizer
