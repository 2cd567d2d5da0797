// LoadTokenizer: the tokenizer for a model path, whatever form the model comes in.
//
//   PAGELLM_ASSIGN_OR_RETURN(auto tok, tokenizer::LoadTokenizer("/models/qwen3"));
//
// Accepts a directory holding tokenizer.json, a tokenizer.json path, or a .gguf file
// (its tokenizer.ggml.* metadata).
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "tokenizer/tokenizer.h"

namespace pagellm::tokenizer {

StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& path);

}  // namespace pagellm::tokenizer
