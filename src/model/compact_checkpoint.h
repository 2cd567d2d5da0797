// Compact checkpoints: a Hugging Face model folder whose vocabulary-sized tensors keep
// only the rows that differ, expanded into the ordinary layout by `pagellm unpack-model`.
//
//   PAGELLM_RETURN_IF_ERROR(UnpackCompactCheckpoint({"assets/models/pydoc-qwen3", "models/pydoc-qwen3"}));
//
// Layout of SRC: config.json, generation_config.json (and any other small files, copied
// as they are) plus compact.safetensors. There, a tensor NAME of the full checkpoint is
// stored either as itself, or as the pair
//   NAME.compact  [num_rows + 1, ...]  the distinct rows; the last one is the shared row
//   NAME.rows     [num_rows] int32     the token id each of the first num_rows rows belongs to
// and expands to NAME [vocab_size, ...] (vocab_size from config.json) where id rows[i]
// gets row i and every other id the shared row. pagellm's small model stores its
// embedding so: ~23k trained rows and one row shared by the ids its training text never
// used enough, 5 MB of bf16 instead of 78 MB, and the expansion is exact.
// The tokenizer (tokenizer.json, tokenizer_config.json) comes from `tokenizer_dir`.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace pagellm {

struct UnpackOptions {
  std::string src_dir;
  std::string out_dir;
  std::string tokenizer_dir;  // "" => the Qwen3 tokenizer of the npm references
};

// Returns the files written into out_dir.
StatusOr<std::vector<std::string>> UnpackCompactCheckpoint(const UnpackOptions& options);

}  // namespace pagellm
