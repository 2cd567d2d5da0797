// GGUF model metadata (general.* and {arch}.*) for a Hugging Face Qwen2/Qwen3 checkpoint
// (and Qwen3-Next / Qwen3.5 / Qwen3.5-MoE: archs qwen3next / qwen35 / qwen35moe), with the keys, value types and
// rules of llama.cpp's convert_hf_to_gguf.py (TextModel.set_gguf_parameters,
// get_vocab_base, gguf-py SpecialVocab), so `pagellm convert` output loads in llama.cpp.
//
//   PAGELLM_ASSIGN_OR_RETURN(Json config, ReadJsonFile(dir + "/config.json"));
//   PAGELLM_ASSIGN_OR_RETURN(GgufMetadata model_kv, BuildGgufModelMetadata(config, GgmlType::kQ8_0, "Qwen3-0.6B"));
//   for (auto& [k, v] : model_kv) writer.AddMetadata(k, v);
// (tokenizer keys: gguf_tokenizer_metadata.h)
//
// Inputs are parsed JSON (not ModelConfig) so this layer stays independent of src/model.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/json.h"
#include "common/status.h"
#include "gguf/gguf_types.h"
#include "gguf/gguf_value.h"

namespace pagellm {

using GgufMetadata = std::vector<std::pair<std::string, GgufValue>>;

// "qwen2" / "qwen3" / "qwen3next" / "qwen35" / "qwen35moe" from config.json's model_type
// (qwen2, qwen3, qwen3_next, qwen3_5[_text], qwen3_5_moe[_text]); other types are Unimplemented.
StatusOr<std::string> GgufArchFromHfConfig(const Json& config);

// config.json with Qwen3.5's text_config merged over the top level (as the converter's
// hparams; the top-level tie_word_embeddings wins); other configs unchanged.
Json MergedHfTextConfig(const Json& config);

// general.* and {arch}.* keys: general.architecture, general.name, general.file_type,
// general.quantization_version, block_count, context_length, embedding_length,
// feed_forward_length, attention.head_count(_kv), attention.key_length/value_length (when
// config has head_dim), rope.freq_base, attention.layer_norm_rms_epsilon, and
// rope.scaling.{type,factor,original_context_length,...} for linear/yarn rope scaling.
// Hybrid archs add (Qwen3NextModel / _Qwen35MRopeMixin): rope.dimension_sections (qwen35*,
// [11,11,10,0] when absent), expert_count / expert_used_count / expert_feed_forward_length /
// expert_shared_feed_forward_length (MoE), ssm.{conv_kernel,state_size,group_count,
// time_step_rank,inner_size}, full_attention_interval and rope.dimension_count (partial
// rotary dims).
// `nextn_predict_layers` > 0 (hybrid archs only): the file carries that many multi-token-
// prediction blocks after the decoder layers, as _QwenMtpMixin writes them: block_count counts
// them and {arch}.nextn_predict_layers (after the expert sizes) says how many; 0 writes neither
// (convert_hf_to_gguf.py --no-mtp, or a checkpoint without mtp.* tensors).
// `outtype` is the type of the 2-D weights (general.file_type: f32 0, f16 1, q8_0 7, bf16 32).
StatusOr<GgufMetadata> BuildGgufModelMetadata(const Json& config, GgmlType outtype, std::string_view name,
                                              int64_t nextn_predict_layers = 0);

}  // namespace pagellm
