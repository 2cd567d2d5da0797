// GGUF tokenizer metadata (tokenizer.*) from a Hugging Face tokenizer.json,
// tokenizer_config.json and config.json, following llama.cpp's converter
// (convert_hf_to_gguf.py get_vocab_base + gguf-py SpecialVocab) for GPT-2-style BPE.
//
//   PAGELLM_ASSIGN_OR_RETURN(GgufMetadata kv,
//                            BuildGgufTokenizerMetadata(tokenizer_json, tokenizer_config, config, "qwen2"));
//
// Keys: tokenizer.ggml.model "gpt2"; .pre = `pre` ("qwen2" for Qwen2/2.5/3); .tokens
// (config.vocab_size entries in id order, added tokens included, "[PAD<i>]" for ids no token
// has); .token_type (1 normal, 3 control: added tokens marked special or spelled "<|...|>",
// 4 user-defined: other added tokens, 5 unused: the padding ids); .merges ("a b" strings);
// .{bos,eos,unknown,seperator,padding,mask}_token_id (tokenizer_config's *_token looked up in
// the added tokens first, else config.json's *_token_id); .add_{bos,eos,...}_token from
// tokenizer_config; tokenizer.chat_template.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/json.h"
#include "common/status.h"
#include "gguf/gguf_metadata.h"

namespace pagellm {

// llama.cpp token types (tokenizer.ggml.token_type).
enum class GgufTokenType : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

StatusOr<GgufMetadata> BuildGgufTokenizerMetadata(const Json& tokenizer_json, const Json& tokenizer_config,
                                                  const Json& config, std::string_view pre = "qwen2");

}  // namespace pagellm
