#include "tokenizer/load_tokenizer.h"

namespace pagellm::tokenizer {

StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& path) {
  // Tokenizer::FromFile accepts a directory or the tokenizer.json itself.
  return Tokenizer::FromFile(path);
}

}  // namespace pagellm::tokenizer
